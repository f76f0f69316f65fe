<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\ClaimInProgressException;
use LeaseGate\ForbiddenException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** once() runs the work once, stores and replays its result, abandons on failure, waits out a dead worker */
final class ClaimTest extends TestCase
{
    public function testOnceRunsTheWorkOnce(): void
    {
        $c = Gateway::client();
        $key = Gateway::name('user-42:2026-12-01');
        $runs = 0;
        $checkIn = function () use (&$runs): array {
            $runs++;
            return ['coins' => 10, 'note' => 'café', 'streak' => 3];
        };
        $first = $c->once('daily-checkin', $key, $checkIn);
        $second = $c->once('daily-checkin', $key, $checkIn);
        self::eq($runs, 1, 'once runs the work once');
        self::eq($first, ['coins' => 10, 'note' => 'café', 'streak' => 3], 'the first call returns the result');
        self::eq($second, $first, 'a later call returns the stored result');
        $got = $c->getClaim('daily-checkin', $key);
        self::eq([$got->state, $got->result], ['done', $first], 'getClaim shows the done state');

        // The work fails: the claim is abandoned and the next call runs it.
        $failKey = Gateway::name('fails');
        $e = self::thrown(fn () => $c->once('reward', $failKey, function (): never {
            throw new \RuntimeException('provider down');
        }));
        self::assertTrue($e instanceof \RuntimeException && $e->getMessage() === 'provider down', 'the work\'s exception is rethrown: ' . self::show($e));
        self::eq($c->once('reward', $failKey, fn () => 'paid'), 'paid', 'after a failure the next call runs the work');

        // A worker that died mid-work: its claim blocks others until its lease expires.
        $deadKey = Gateway::name('dead-worker');
        $dead = $c->claim('reward', $deadKey, 'dead-worker', 1);
        self::assertTrue($dead->created && $dead->claim !== null, 'a pending claim is created');
        $e = self::thrown(fn () => $c->claim('reward', $deadKey, 'other', 30));
        self::assertTrue($e instanceof ClaimInProgressException && $e->status === 409 && ($e->retryAfter ?? 0) >= 1,
            'another owner gets ClaimInProgressException with Retry-After: ' . self::show($e));
        $start = microtime(true);
        $r = $c->once('reward', $deadKey, fn () => 'ran after expiry', 30, null, 10.0);
        $elapsed = microtime(true) - $start;
        self::eq($r, 'ran after expiry', 'once runs the work once the dead worker\'s lease expired');
        self::assertTrue($elapsed < 5.0, sprintf('it waited about the lease (1 s), took %.2f s', $elapsed));
        if ($dead->claim !== null) {
            $e = self::thrown(fn () => $c->completeClaim($dead->claim, 'late'));
            self::assertTrue($e instanceof ForbiddenException, 'the dead worker\'s late complete is ForbiddenException: ' . self::show($e));
        }

        // Long work extends the lease through the callable once() passes in.
        $slowKey = Gateway::name('slow');
        $r = $c->once('reward', $slowKey, function (callable $extend) use ($c, $slowKey): string {
            for ($i = 0; $i < 3; $i++) {
                usleep(600_000); // the work being slow
                $extend();
            }
            $e = self::thrown(fn () => $c->claim('reward', $slowKey, 'other', 30));
            self::assertTrue($e instanceof ClaimInProgressException, 'the extended claim is still in progress: ' . self::show($e));
            return 'slow but once';
        }, 1);
        self::eq($r, 'slow but once', 'long work with extensions completes');
    }
}
