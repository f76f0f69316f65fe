<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * What UserLockGuard decided for one request: $pass it on (adding
 * $headers to its response), or answer $status with $headers and the
 * problem document $problem (application/problem+json).
 */
final class UserLockVerdict
{
    /**
     * @param array<string, string> $headers
     * @param ?array{type: string, title: string, status: int, detail: string} $problem
     * @param ?\Throwable $error the gateway's exception behind a refusal or a fail-open pass
     * @param ?UserLockResult $result the gateway's answer, when there was one
     */
    public function __construct(
        public readonly bool $pass,
        public readonly ?int $status,
        public readonly array $headers,
        public readonly ?array $problem,
        public readonly ?\Throwable $error = null,
        public readonly ?UserLockResult $result = null,
    ) {
    }

    /** The problem document as JSON (empty when the request passes). */
    public function body(): string
    {
        return $this->problem === null ? '' : (string) json_encode(
            $this->problem,
            JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE,
        );
    }
}
