<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Lock;
use LeaseGate\NotFoundException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\ValidationException;

/** Client::addUserLock/clearUserLock and the drop-in Lock class */
final class UserLockTest extends TestCase
{
    public function testUserLocksAndTheDropInLockClass(): void
    {
        $c = Gateway::client();
        $name = 'php.daily-task_1';
        $user = Gateway::willClear(Gateway::name('user1')); // flagged on its 5th attempt

        $first = $c->addUserLock($name, $user);
        self::eq([$first->acquired, $first->attempts, $first->flagged], [true, 1, false], 'first attempt acquires');
        $left = (float) $first->expiresAt->format('U.v') - microtime(true);
        self::assertTrue($left > 5 && $left <= 11, sprintf('default window about 10 s, %.1f s left', $left));
        for ($n = 2; $n <= 5; $n++) {
            $r = $c->addUserLock($name, $user);
            self::eq([$r->acquired, $r->attempts], [false, $n], "attempt $n is refused and counted");
            self::eq($r->flagged, $n >= 5, "attempt $n flagged (max_attempts 5)");
            self::eq([$r->rateLimit?->policy, $r->rateLimit?->quota, $r->rateLimit?->remaining], [$name, 5, 5 - $n], "attempt $n: RateLimit fields");
        }
        self::eq($c->addUserLock($name, Gateway::name('user2'))->acquired, true, 'another user is independent');
        self::eq($c->addUserLock($name . '-other', $user)->acquired, true, 'another lock name is independent');

        $c->clearUserLock($name, $user);
        $r = $c->addUserLock($name, $user);
        self::eq([$r->acquired, $r->attempts, $r->flagged], [true, 1, false], 'after clearUserLock the next attempt acquires');
        $c->clearUserLock($name, $user);
        self::throws(NotFoundException::class, fn () => $c->clearUserLock($name, $user), 'clearing twice is 404');

        // The window ends by itself after its TTL.
        $short = Gateway::name('short');
        self::eq($c->addUserLock($name, $short, 1)->acquired, true, '1 s window opens');
        self::eq($c->addUserLock($name, $short, 1)->acquired, false, 'repeat inside the window');
        usleep(1_300_000);
        $r = $c->addUserLock($name, $short, 1);
        self::eq([$r->acquired, $r->attempts], [true, 1], 'after the window a new one opens');

        // User ids are path segments: encoded, and every id is its own counter.
        $odd = Gateway::name('u') . '/ü ?#%2F';
        self::eq($c->addUserLock($name, $odd)->acquired, true, 'user id with slash, unicode, space, ?, #, %');
        self::eq($c->addUserLock($name, $odd)->attempts, 2, 'same odd user id counts on');
        self::eq($c->addUserLock($name, Gateway::name('u'))->acquired, true, 'its prefix is another user');
        $c->clearUserLock($name, $odd);

        $e = self::throws(ValidationException::class, fn () => $c->addUserLock($name, '   '), 'whitespace-only user id');
        self::eq($e?->hasFieldError('user_id'), true, 'names user_id');
        $e = self::throws(ValidationException::class, fn () => $c->addUserLock('bad name!', $user), 'name outside [A-Za-z0-9._-]');
        self::eq($e?->hasFieldError('name'), true, 'names name');
        self::throws(ValidationException::class, fn () => $c->addUserLock(str_repeat('n', 65), $user), '65-byte name');
        self::throws(ValidationException::class, fn () => $c->addUserLock($name, str_repeat('u', 129)), '129-byte user id');
        $e = self::throws(ValidationException::class, fn () => $c->addUserLock($name, $user, 0), 'ttl 0');
        self::eq($e?->hasFieldError('ttl_seconds'), true, 'names ttl_seconds');

        // The drop-in class, as the old code calls it.
        Lock::useClient($c);
        $mid = random_int(1_000_000, 9_999_999);
        self::eq((new Lock($mid, 'receiveDailyTask'))->addUserLock(), true, 'Lock: first addUserLock() is true');
        $lock = new Lock($mid, 'receiveDailyTask');
        self::eq($lock->addUserLock(), false, 'Lock: second addUserLock() is false');
        self::eq([$lock->attempts(), $lock->flagged(), $lock->banned()], [2, false, false], 'Lock: attempts 2');
        self::eq($lock->addUserLock(), false, 'Lock: third addUserLock() is false');
        self::eq($lock->attempts(), 3, 'Lock: attempts 3');
        self::eq($lock->clearUserLock(), true, 'Lock: clearUserLock() releases');
        self::eq($lock->clearUserLock(), false, 'Lock: clearUserLock() with nothing there');
        self::eq($lock->addUserLock(10), true, 'Lock: after clear, addUserLock(10) is true again');
        self::eq($lock->attempts(), 1, 'Lock: attempts back to 1');
        self::eq((new Lock((string) $mid, 'receiveDailyTask'))->addUserLock(), false, 'Lock: string and int mid are the same user');
        self::throws(ValidationException::class, fn () => (new Lock($mid, 'bad name!'))->addUserLock(), 'Lock: invalid name throws');
        $lock->clearUserLock();
        Lock::useClient(null);
    }
}
