<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * A held lock (LOCK in the contract). $token is the fencing token: it
 * strictly increases for every new holder of the same resource, so a
 * downstream store can refuse writes that carry a lower token than the
 * highest it has seen.
 */
final class Lease
{
    public function __construct(
        public readonly string $resource,
        public readonly string $owner,
        public readonly int $token,
        public readonly \DateTimeImmutable $acquiredAt,
        public readonly \DateTimeImmutable $expiresAt,
    ) {
    }

    /**
     * @param mixed $data the decoded "lock" object
     *
     * @throws TransportException when it is not a LOCK
     */
    public static function fromArray(mixed $data): self
    {
        $data = Answer::object($data, 'lock', [
            'resource' => 'string', 'owner' => 'string', 'token' => 'int',
            'acquired_at' => 'string', 'expires_at' => 'string',
        ]);
        return new self(
            $data['resource'],
            $data['owner'],
            $data['token'],
            Answer::time($data['acquired_at']),
            Answer::time($data['expires_at']),
        );
    }

    /** Milliseconds left on this machine's clock (the gateway decides by Redis's clock). */
    public function remainingMs(?\DateTimeImmutable $now = null): int
    {
        $now ??= new \DateTimeImmutable('now', new \DateTimeZone('UTC'));
        $diff = (float) $this->expiresAt->format('U.v') - (float) $now->format('U.v');
        return max(0, (int) round($diff * 1000));
    }

    /** @internal parses the contract's RFC 3339 UTC timestamps (Answer::time) */
    public static function time(string $value): \DateTimeImmutable
    {
        return Answer::time($value);
    }
}
