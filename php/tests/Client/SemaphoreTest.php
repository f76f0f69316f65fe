<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\ForbiddenException;
use LeaseGate\LimitMismatchException;
use LeaseGate\NotFoundException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** permits up to the limit, full answers, limit-mismatch, renew, release (403 vs 404) */
final class SemaphoreTest extends TestCase
{
    public function testPermitsUpToTheLimit(): void
    {
        $c = Gateway::client();
        $name = Gateway::name('provider');
        $a = $c->acquirePermit($name, 'w1', 2, 30);
        $b = $c->acquirePermit($name, 'w2', 2, 30);
        self::assertTrue($a->acquired && $b->acquired && $a->permit !== null && $b->permit !== null, 'two permits of limit 2');
        self::assertTrue($b->permit->token > $a->permit->token, 'tokens increase: ' . self::show([$a->permit->token, $b->permit->token]));
        self::eq([$b->holders, $b->limit], [2, 2], 'holders and limit after the second permit');

        $full = $c->acquirePermit($name, 'w3', 2, 30);
        self::eq([$full->acquired, $full->permit, $full->holders, $full->limit], [false, null, 2, 2], 'a full semaphore is an answer, not an exception');
        self::assertTrue($full->retryAfterMs > 0 && $full->retryAfterMs <= 30_000, "retry_after_ms {$full->retryAfterMs} in 1..30000");

        $again = $c->acquirePermit($name, 'w1', 2, 60);
        self::assertTrue($again->acquired && $again->permit?->token === $a->permit->token && $again->permit->expiresAt > $a->permit->expiresAt,
            'the same owner keeps its permit and its expiry moves');

        $e = self::thrown(fn () => $c->acquirePermit($name, 'w3', 3, 30));
        self::assertTrue($e instanceof LimitMismatchException && $e->status === 409, 'another limit is LimitMismatchException 409: ' . self::show($e));
        self::assertTrue($e instanceof LimitMismatchException && str_contains($e->detail, '2'), 'its detail names the limit in force: ' . self::show($e?->getMessage()));

        $st = $c->semaphoreStatus($name);
        self::eq([$st['limit'], count($st['holders'])], [2, 2], 'status: limit and holders');

        $p = $c->renewPermit($name, 'w2', 90);
        self::eq($p->token, $b->permit->token, 'renew keeps the token');

        $e = self::thrown(fn () => $c->releasePermit($name, 'w9'));
        self::assertTrue($e instanceof ForbiddenException, 'release by another owner is ForbiddenException: ' . self::show($e));
        $c->releasePermit($name, 'w1', $a->permit->token);
        $c->releasePermit($name, 'w2');
        $e = self::thrown(fn () => $c->releasePermit($name, 'w2'));
        self::assertTrue($e instanceof NotFoundException, 'release on an empty semaphore is NotFoundException: ' . self::show($e));
    }
}
