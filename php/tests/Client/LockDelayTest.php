<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\ValidationException;

/** acquire with lock_delay_ms: an expired lease keeps others out for the delay */
final class LockDelayTest extends TestCase
{
    public function testExpiryIsFollowedByTheDelayAndAReleaseIsNot(): void
    {
        $c = Gateway::client();

        $e = self::throws(ValidationException::class, fn () => $c->acquire(Gateway::name('delay-max'), 'o', 30, 0, 60_001), 'lock_delay_ms over 60000');
        self::eq($e?->hasFieldError('lock_delay_ms'), true, 'lock_delay_ms over the maximum names lock_delay_ms');

        // Expired: refused to another owner for the delay, with its time left.
        $res = Gateway::name('delay-expiry');
        $first = $c->acquire($res, 'holder', 1, 0, 3_000);
        self::eq($first->acquired, true, 'holder acquires with a 3 s lock delay');
        usleep(1_200_000);
        $r = $c->acquire($res, 'next', 30);
        self::eq($r->acquired, false, 'another owner is refused during the delay');
        self::assertTrue($r->retryAfterMs > 0 && $r->retryAfterMs <= 3_000, 'retry_after_ms is what is left of the delay: ' . $r->retryAfterMs);
        self::eq($c->acquire($res, 'holder', 30)->acquired, true, 'the same owner takes it again');
        $c->release($res, 'holder');

        // Released: no delay.
        $res = Gateway::name('delay-release');
        $c->acquire($res, 'holder', 30, 0, 60_000);
        $c->release($res, 'holder');
        $r = $c->acquire($res, 'next', 30);
        self::eq($r->acquired, true, 'a release ends the lease with no delay');
        $c->release($res, 'next');
    }
}
