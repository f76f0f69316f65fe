<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * The answer to acquirePermit: $acquired with the $permit, or full (every
 * slot taken) with a hint how long until the earliest permit expires.
 * A full semaphore is a normal answer, not an exception.
 */
final class PermitResult
{
    public function __construct(
        public readonly bool $acquired,
        public readonly ?Permit $permit,
        public readonly int $holders,
        public readonly int $limit,
        public readonly int $retryAfterMs = 0,
    ) {
    }

    /** @throws TransportException when the answer has neither documented shape */
    public static function fromArray(mixed $data): self
    {
        if (
            !is_array($data) || !is_bool($data['acquired'] ?? null)
            || !is_int($data['holders'] ?? null) || !is_int($data['limit'] ?? null)
        ) {
            throw new TransportException('leasegate: unexpected answer to a semaphore acquire');
        }
        if ($data['acquired']) {
            return new self(true, Permit::fromArray($data['permit'] ?? null), $data['holders'], $data['limit']);
        }
        return new self(
            false,
            null,
            $data['holders'],
            $data['limit'],
            is_int($data['retry_after_ms'] ?? null) ? $data['retry_after_ms'] : 0,
        );
    }
}
