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
        $data = Answer::object($data, 'claim', [
            'scope' => 'string', 'key' => 'string', 'owner' => 'string', 'token' => 'int',
            'claimed_at' => 'string', 'expires_at' => 'string',
        ]);
        return new self(
            $data['scope'],
            $data['key'],
            $data['owner'],
            $data['token'],
            Answer::time($data['claimed_at']),
            Answer::time($data['expires_at']),
        );
    }
}
