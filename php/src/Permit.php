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
        $data = Answer::object($data, 'permit', [
            'name' => 'string', 'owner' => 'string', 'token' => 'int',
            'acquired_at' => 'string', 'expires_at' => 'string',
        ]);
        return new self(
            $data['name'],
            $data['owner'],
            $data['token'],
            Answer::time($data['acquired_at']),
            Answer::time($data['expires_at']),
        );
    }
}
