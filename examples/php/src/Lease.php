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
        if (
            !is_array($data)
            || !is_string($data['resource'] ?? null)
            || !is_string($data['owner'] ?? null)
            || !is_int($data['token'] ?? null)
            || !is_string($data['acquired_at'] ?? null)
            || !is_string($data['expires_at'] ?? null)
        ) {
            throw new TransportException('leasegate: unexpected answer: "lock" is not {resource, owner, token, acquired_at, expires_at}');
        }
        return new self(
            $data['resource'],
            $data['owner'],
            $data['token'],
            self::time($data['acquired_at']),
            self::time($data['expires_at']),
        );
    }

    /** Milliseconds left on this machine's clock (the gateway decides by Redis's clock). */
    public function remainingMs(?\DateTimeImmutable $now = null): int
    {
        $now ??= new \DateTimeImmutable('now', new \DateTimeZone('UTC'));
        $diff = (float) $this->expiresAt->format('U.v') - (float) $now->format('U.v');
        return max(0, (int) round($diff * 1000));
    }

    /** @internal parses the contract's RFC 3339 UTC timestamps */
    public static function time(string $value): \DateTimeImmutable
    {
        $t = \DateTimeImmutable::createFromFormat('Y-m-d\TH:i:s.vP', $value)
            ?: \DateTimeImmutable::createFromFormat(\DateTimeInterface::RFC3339, $value);
        if ($t === false) {
            throw new TransportException(sprintf('leasegate: unexpected answer: %s is not an RFC 3339 timestamp', json_encode($value)));
        }
        return $t->setTimezone(new \DateTimeZone('UTC'));
    }
}
