<?php

declare(strict_types=1);

namespace LeaseGate;

use LeaseGate\Transport\Response;

/**
 * A user lock's quota from the gateway's IETF RateLimit header fields
 * (draft-ietf-httpapi-ratelimit-headers-10):
 *
 *     RateLimit-Policy: "login";q=5;w=60
 *     RateLimit: "login";r=2;t=30
 *
 * $quota is the lock's max_attempts, $windowSeconds its window,
 * $remaining the attempts left before the flag, $resetSeconds the seconds
 * until the window (or a ban) ends.
 */
final class RateLimit
{
    public function __construct(
        public readonly string $policy,
        public readonly int $quota,
        public readonly int $windowSeconds,
        public readonly int $remaining,
        public readonly int $resetSeconds,
    ) {
    }

    /**
     * The two header fields as the gateway sent them, for passing them on
     * to the caller of an app (RateLimit-Policy and RateLimit).
     *
     * @return array{RateLimit-Policy: string, RateLimit: string}
     */
    public function headers(): array
    {
        $name = '"' . addcslashes($this->policy, '"\\') . '"';
        return [
            'RateLimit-Policy' => sprintf('%s;q=%d;w=%d', $name, $this->quota, $this->windowSeconds),
            'RateLimit' => sprintf('%s;r=%d;t=%d', $name, $this->remaining, $this->resetSeconds),
        ];
    }

    /** Null when either field is missing or not understood. */
    public static function fromResponse(Response $response): ?self
    {
        $policy = self::item($response->header('RateLimit-Policy'));
        $limit = self::item($response->header('RateLimit'));
        if (
            $policy === null || $limit === null || $policy[0] !== $limit[0]
            || !isset($policy[1]['q'], $limit[1]['r'])
        ) {
            return null;
        }
        return new self($policy[0], $policy[1]['q'], $policy[1]['w'] ?? 0, $limit[1]['r'], $limit[1]['t'] ?? 0);
    }

    /**
     * The first member of a structured-field list: "name";k=int;...
     *
     * @return ?array{0: string, 1: array<string, int>}
     */
    private static function item(?string $value): ?array
    {
        if ($value === null) {
            return null;
        }
        $first = trim(explode(',', $value, 2)[0]);
        if (preg_match('/^"((?:[^"\\\\]|\\\\.)*)"((?:;[a-z*][a-z0-9_.*-]*(?:=[^;]*)?)*)$/', $first, $m) !== 1) {
            return null;
        }
        $params = [];
        foreach (array_filter(explode(';', $m[2])) as $p) {
            [$k, $v] = array_pad(explode('=', $p, 2), 2, '');
            if (preg_match('/^-?[0-9]{1,15}$/', $v) === 1) {
                $params[$k] = (int) $v;
            }
        }
        return [stripcslashes($m[1]), $params];
    }
}
