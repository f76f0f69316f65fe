<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\Helper;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\ValidationException;

/** acquire with wait_ms: woken by release and by expiry, times out */
final class WaitingTest extends TestCase
{
    public function testWaitWokenByReleaseAndExpiryAndTimesOut(): void
    {
        $c = Gateway::client();

        $e = self::throws(ValidationException::class, fn () => $c->acquire(Gateway::name('wait-max'), 'o', 30, 30_001), 'wait_ms over max_wait_ms');
        self::eq($e?->hasFieldError('wait_ms'), true, 'wait_ms over max names wait_ms');

        // Woken by a release from another process.
        $res = Gateway::name('wait-release');
        $holder = $c->acquire($res, 'holder', 30)->lease;
        self::assertTrue($holder !== null, 'holder acquires');
        $helper = new Helper('release_after.php', [Gateway::url(), Gateway::transportName(), $res, 'holder', '300']);
        self::eq($helper->line(), 'ready', 'releasing process is ready');
        $start = microtime(true);
        $r = $c->acquire($res, 'waiter', 30, 5_000);
        $elapsed = microtime(true) - $start;
        self::eq($helper->finish(), [0, 'released'], 'the holder released while the waiter waited (so nothing was granted twice)');
        self::eq($r->acquired, true, sprintf('waiter acquires after the release (answered after %.2f s)', $elapsed));
        self::assertTrue($elapsed < 3.0, sprintf('waiter woken within 3 s of a release 0.3 s in, took %.2f s', $elapsed));
        self::assertTrue($r->lease !== null && $r->lease->token > $holder->token, 'waiter gets a higher token: ' . self::show([$holder->token, $r->lease?->token]));
        if ($r->acquired) {
            $c->release($res, 'waiter');
        }

        // Woken by expiry.
        $res = Gateway::name('wait-expiry');
        $c->acquire($res, 'holder', 1);
        $start = microtime(true);
        $r = $c->acquire($res, 'waiter', 30, 5_000);
        $elapsed = microtime(true) - $start;
        self::eq($r->acquired, true, sprintf('waiter acquires when a 1 s lease expires (answered after %.2f s)', $elapsed));
        self::assertTrue($elapsed < 4.0, sprintf('waiter woken within 4 s, took %.2f s', $elapsed));
        if ($r->acquired) {
            $c->release($res, 'waiter');
        }

        // Held all along: answered "not acquired" once wait_ms has passed.
        $res = Gateway::name('wait-timeout');
        $c->acquire($res, 'holder', 30);
        $start = microtime(true);
        $r = $c->acquire($res, 'waiter', 30, 400);
        $elapsed = microtime(true) - $start;
        self::eq($r->acquired, false, 'waiter on a held lock is not granted');
        self::assertTrue($elapsed >= 0.35 && $elapsed < 3.0, sprintf('answered once wait_ms (0.4 s) passed, took %.2f s', $elapsed));
        self::eq($c->status($res)->owner, 'holder', 'holder still holds');
        $c->release($res, 'holder');
    }
}
