<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * The answer to POST /user-locks/{name}/{user_id}: $acquired only for the
 * attempt that opened the window (attempts == 1); $attempts counts the
 * attempts in the current window; $flagged once they reached the lock's
 * max_attempts. $rateLimit is read from the RateLimit header fields
 * (null when the gateway sent none).
 */
final class UserLockResult
{
    public function __construct(
        public readonly bool $acquired,
        public readonly int $attempts,
        public readonly bool $flagged,
        public readonly \DateTimeImmutable $expiresAt,
        public readonly ?RateLimit $rateLimit = null,
    ) {
    }

    /** @throws TransportException when the answer is not the documented shape */
    public static function fromArray(mixed $data, ?RateLimit $rateLimit = null): self
    {
        if (
            !is_array($data)
            || !is_bool($data['acquired'] ?? null)
            || !is_int($data['attempts'] ?? null)
            || !is_bool($data['flagged'] ?? null)
            || !is_string($data['expires_at'] ?? null)
        ) {
            throw new TransportException(
                'leasegate: unexpected answer to a user lock: not {acquired, attempts, flagged, expires_at}',
            );
        }
        return new self(
            $data['acquired'],
            $data['attempts'],
            $data['flagged'],
            Answer::time($data['expires_at']),
            $rateLimit,
        );
    }
}
