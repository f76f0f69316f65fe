<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\ForbiddenException;
use LeaseGate\NotFoundException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** acquire, contend, status, release (403 vs 404), renew */
final class ResourceLockTest extends TestCase
{
    public function testAcquireContendStatusReleaseRenew(): void
    {
        $c = Gateway::client();
        $res = Gateway::name('report');

        $a = $c->acquire($res, 'node-a', 30);
        self::eq($a->acquired, true, 'free resource is acquired');
        $lease = $a->lease;
        self::assertTrue($lease !== null, 'acquire returns the lease');
        self::eq([$lease->resource, $lease->owner], [$res, 'node-a'], 'lease resource and owner');
        self::assertTrue($lease->token > 0, 'token is positive, got ' . $lease->token);
        $ttl = self::expiresInMs($lease);
        self::assertTrue($ttl >= 29_900 && $ttl <= 30_100, "expires_at - acquired_at = $ttl ms, want about 30000");
        self::assertTrue($lease->remainingMs() > 20_000, 'remainingMs ' . $lease->remainingMs());

        $again = $c->acquire($res, 'node-a', 60);
        self::eq($again->acquired, true, 'same owner re-acquires');
        self::eq($again->lease?->token, $lease->token, 'same owner keeps the token');
        self::assertTrue($again->lease !== null && $again->lease->expiresAt > $lease->expiresAt, 're-acquire moves expires_at');

        $b = $c->acquire($res, 'node-b', 30);
        self::eq([$b->acquired, $b->lease, $b->resource], [false, null, $res], 'another owner is told it is held');
        self::assertTrue($b->retryAfterMs > 0 && $b->retryAfterMs <= 60_000, "retry_after_ms {$b->retryAfterMs} in 1..60000");

        $st = $c->status($res);
        self::eq([$st->owner, $st->token], ['node-a', $lease->token], 'status shows the holder');

        self::throws(ForbiddenException::class, fn () => $c->release($res, 'node-b'), 'release by another owner is 403, never 404');
        self::throws(ForbiddenException::class, fn () => $c->release($res, 'node-a', $lease->token + 1), 'release under another token is 403');
        self::eq($c->status($res)->owner, 'node-a', 'refused releases change nothing');

        $renewed = $c->renew($res, 'node-a', 120);
        self::eq($renewed->token, $lease->token, 'renew keeps the token');
        self::assertTrue($renewed->expiresAt > $again->lease->expiresAt, 'renew moves expires_at (' . self::show($renewed->expiresAt) . ')');
        $c->renew($res, 'node-a', 120, $lease->token);
        self::throws(ForbiddenException::class, fn () => $c->renew($res, 'node-b', 120), 'renew by another owner is 403');

        $c->release($res, 'node-a', $lease->token);
        $e = self::throws(NotFoundException::class, fn () => $c->status($res), 'status after release is 404');
        self::eq($e?->status, 404, 'status code');
        self::throws(NotFoundException::class, fn () => $c->release($res, 'node-a'), 'second release is 404 (gone), not 403');
        self::throws(NotFoundException::class, fn () => $c->release($res, 'node-b'), 'release of nothing by anyone is 404');
        self::throws(NotFoundException::class, fn () => $c->renew($res, 'node-a', 30), 'renew after release is 404');

        $next = $c->acquire($res, 'node-b', 30);
        self::eq($next->acquired, true, 'free again after release');
        $c->release($res, 'node-b');
    }

    private static function expiresInMs(\LeaseGate\Lease $l): int
    {
        return (int) round(((float) $l->expiresAt->format('U.v') - (float) $l->acquiredAt->format('U.v')) * 1000);
    }
}
