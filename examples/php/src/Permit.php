<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * A held permit of a counting semaphore (PERMIT in the contract). $token
 * strictly increases for every new permit on the same name.
 */
final class Permit
{
    public function __construct(
        public readonly string $name,
        public readonly string $owner,
        public readonly int $token,
        public readonly \DateTimeImmutable $acquiredAt,
        public readonly \DateTimeImmutable $expiresAt,
    ) {
    }

    /** @throws TransportException when $data is not a PERMIT */
    public static function fromArray(mixed $data): self
    {
        if (
            !is_array($data)
            || !is_string($data['name'] ?? null)
            || !is_string($data['owner'] ?? null)
            || !is_int($data['token'] ?? null)
            || !is_string($data['acquired_at'] ?? null)
            || !is_string($data['expires_at'] ?? null)
        ) {
            throw new TransportException('leasegate: unexpected answer: "permit" is not {name, owner, token, acquired_at, expires_at}');
        }
        return new self($data['name'], $data['owner'], $data['token'], Lease::time($data['acquired_at']), Lease::time($data['expires_at']));
    }
}
