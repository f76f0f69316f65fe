<?php

declare(strict_types=1);

namespace LeaseGate;

/** A pending claim (CLAIM in the contract): who is doing the work, under which token, until when. */
final class Claim
{
    public function __construct(
        public readonly string $scope,
        public readonly string $key,
        public readonly string $owner,
        public readonly int $token,
        public readonly \DateTimeImmutable $claimedAt,
        public readonly \DateTimeImmutable $expiresAt,
    ) {
    }

    /** @throws TransportException when $data is not a CLAIM */
    public static function fromArray(mixed $data): self
    {
        if (
            !is_array($data)
            || !is_string($data['scope'] ?? null)
            || !is_string($data['key'] ?? null)
            || !is_string($data['owner'] ?? null)
            || !is_int($data['token'] ?? null)
            || !is_string($data['claimed_at'] ?? null)
            || !is_string($data['expires_at'] ?? null)
        ) {
            throw new TransportException('leasegate: unexpected answer: "claim" is not {scope, key, owner, token, claimed_at, expires_at}');
        }
        return new self($data['scope'], $data['key'], $data['owner'], $data['token'], Lease::time($data['claimed_at']), Lease::time($data['expires_at']));
    }
}
