<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * The answer to an acquire: either $acquired with the $lease, or not
 * acquired (held by another owner) with a hint how long to wait before
 * trying again. Contention is a normal answer, not an exception.
 */
final class AcquireResult
{
    public function __construct(
        public readonly bool $acquired,
        public readonly string $resource,
        public readonly ?Lease $lease,
        public readonly int $retryAfterMs = 0,
    ) {
    }

    /** @throws TransportException when the answer has neither documented shape */
    public static function fromArray(mixed $data): self
    {
        if (!is_array($data) || !is_bool($data['acquired'] ?? null)) {
            throw new TransportException('leasegate: unexpected answer to acquire: no boolean "acquired"');
        }
        if ($data['acquired']) {
            $lease = Lease::fromArray($data['lock'] ?? null);
            return new self(true, $lease->resource, $lease, 0);
        }
        if (!is_string($data['resource'] ?? null) || !is_int($data['retry_after_ms'] ?? null)) {
            throw new TransportException(
                'leasegate: unexpected answer to acquire: not acquired without resource and retry_after_ms',
            );
        }
        return new self(false, $data['resource'], null, $data['retry_after_ms']);
    }
}
