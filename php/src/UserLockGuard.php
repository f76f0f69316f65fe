<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * The abuse counter in front of a route, for the framework integrations
 * (LeaseGate\Laravel\UserLockMiddleware, LeaseGate\Symfony\UserLockSubscriber):
 * one POST /user-locks/{name}/{user_id} per request, and what to answer.
 *
 * - The first attempt in the user's window passes (with the RateLimit
 *   header fields for the response).
 * - A repeat inside the window is refused: 429 "rate-limited" with
 *   Retry-After (seconds until the window ends) and the RateLimit fields;
 *   the gateway counts it and flags the user at the lock's max_attempts.
 * - A banned user (the gateway's 429 "abnormal-usage-detected") is
 *   refused: 429 with the gateway's problem, Retry-After (the ban's
 *   remaining seconds) and the RateLimit fields.
 * - When the gateway cannot answer (UnavailableException: Redis is down;
 *   TransportException: no gateway; InternalException; RateLimitedException:
 *   the gateway's own limit on this API key) the request passes with
 *   $failOpen, else it is refused with 503 and Retry-After.
 *
 * Anything else (a lock name or user id the gateway refuses, a bad API
 * key) is a configuration error and is thrown.
 */
final class UserLockGuard
{
    public function __construct(
        private readonly Client $client,
        private readonly bool $failOpen = false,
    ) {
    }

    /** @param ?int $ttlSeconds the window; null: the gateway's default (10 s) */
    public function check(string $name, string $userId, ?int $ttlSeconds = null): UserLockVerdict
    {
        try {
            $r = $this->client->addUserLock($name, $userId, $ttlSeconds);
        } catch (AbnormalUsageException $e) {
            $retryAfter = $e->retryAfter ?? $e->rateLimit?->resetSeconds ?? 1;
            return new UserLockVerdict(false, 429, self::headers($e->rateLimit, $retryAfter), [
                'type' => $e->type,
                'title' => $e->title !== '' ? $e->title : 'Abnormal usage detected',
                'status' => 429,
                'detail' => $e->detail !== '' ? $e->detail : 'Too many attempts: try again later.',
            ], $e);
        } catch (UnavailableException | TransportException | InternalException | RateLimitedException $e) {
            if ($this->failOpen) {
                return new UserLockVerdict(true, null, [], null, $e);
            }
            $retry = $e instanceof ProblemException ? ($e->retryAfter ?? 1) : 1;
            return new UserLockVerdict(false, 503, ['Retry-After' => (string) max(1, $retry)], [
                'type' => 'about:blank',
                'title' => 'Service Unavailable',
                'status' => 503,
                'detail' => 'The request cannot be checked right now: try again later.',
            ], $e);
        }
        if ($r->acquired) {
            return new UserLockVerdict(true, null, self::headers($r->rateLimit, null), null, null, $r);
        }
        $retry = $r->rateLimit?->resetSeconds
            ?? (int) ceil(max(0.0, (float) $r->expiresAt->format('U.v') - microtime(true)));
        return new UserLockVerdict(false, 429, self::headers($r->rateLimit, max(1, $retry)), [
            'type' => 'about:blank',
            'title' => 'Too Many Requests',
            'status' => 429,
            'detail' => 'This request is already being handled or was just made: try again later.',
        ], null, $r);
    }

    /** @return array<string, string> */
    private static function headers(?RateLimit $rateLimit, ?int $retryAfter): array
    {
        $headers = $rateLimit?->headers() ?? [];
        if ($retryAfter !== null) {
            $headers['Retry-After'] = (string) max(1, $retryAfter);
        }
        return $headers;
    }
}
