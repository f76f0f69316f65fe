<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\AbnormalUsageException;
use LeaseGate\Lock;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** a banned user: AbnormalUsageException with retryAfter, Lock returns false */
final class BanTest extends TestCase
{
    public function testBannedUser(): void
    {
        $c = Gateway::client();
        $user = Gateway::willClear(Gateway::name('banned'));
        $c->request('POST', '/abuse/bans/' . rawurlencode($user), ['seconds' => 60, 'reason' => 'php client test']);

        $e = self::throws(AbnormalUsageException::class, fn () => $c->addUserLock('php.ban', $user), 'banned user gets 429');
        self::eq([$e?->status, $e?->slug()], [429, 'abnormal-usage-detected'], 'problem');
        self::assertTrue($e !== null && $e->retryAfter !== null && $e->retryAfter >= 1 && $e->retryAfter <= 60, 'retryAfter in 1..60: ' . self::show($e?->retryAfter));
        self::eq([$e?->rateLimit?->policy, $e?->rateLimit?->remaining, $e?->rateLimit?->resetSeconds], ['php.ban', 0, $e?->retryAfter], 'a ban carries RateLimit: none left, reset at the ban\'s end');

        $lock = new Lock($user, 'php.ban', $c);
        self::eq($lock->addUserLock(), false, 'Lock: banned user is refused');
        self::eq([$lock->banned(), $lock->attempts()], [true, 0], 'Lock: banned, attempt not counted');
        self::assertTrue(($lock->retryAfter() ?? 0) >= 1, 'Lock: retryAfter ' . self::show($lock->retryAfter()));

        $c->request('DELETE', '/abuse/bans/' . rawurlencode($user));
        self::eq($lock->addUserLock(), true, 'Lock: after unban the first attempt acquires');
        self::eq($lock->banned(), false, 'Lock: no longer banned');
        $lock->clearUserLock();
    }
}
