<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Testing;

use Illuminate\Cache\Lock;
use LeaseGate\Laravel\LeaseGateLockProvider;
use LeaseGate\Symfony\LeaseGateStore;
use LeaseGate\Testing\GatewayTestCase;
use LeaseGate\Tests\Support\Frameworks;
use Symfony\Component\Lock\Key;

/**
 * The fixture a PHP app's tests use: a gateway of the class's own,
 * started from $LEASEGATE_BIN, and its clock moved by fastForward()
 * instead of sleeping for a TTL.
 */
final class GatewayTestCaseTest extends GatewayTestCase
{
    public function testALeaseExpiresWhenTheClockIsMovedPastItsTtl(): void
    {
        $c = $this->client();
        self::assertTrue($c->acquire('report', 'a', 60)->acquired, 'a acquires');
        self::assertFalse($c->acquire('report', 'b', 60)->acquired, 'b while a holds it');
        $before = new \DateTimeImmutable();
        $now = $this->fastForward(60);
        self::assertGreaterThanOrEqual(59, $now->getTimestamp() - $before->getTimestamp(), 'the store is a minute ahead');
        self::assertTrue($c->acquire('report', 'b', 60)->acquired, 'b after a\'s lease ran out');
    }

    public function testTheUserIsFlaggedAtTheFifthAttemptAndANewWindowStarts(): void
    {
        $c = $this->client();
        $flags = [];
        for ($i = 1; $i <= 5; $i++) {
            $flags[] = $c->addUserLock('password-reset', 'user-42', 60)->flagged;
        }
        self::assertSame([false, false, false, false, true], $flags, 'flagged by attempt');
        $this->fastForward(60);
        $next = $c->addUserLock('password-reset', 'user-42', 60);
        self::assertTrue($next->acquired && $next->attempts === 1, 'a new window a minute later');
    }

    public function testTheSymfonyStoreSeesTheLeaseExpire(): void
    {
        Frameworks::require(Key::class, 'php-symfony-lock');
        $store = new LeaseGateStore($this->client());
        $first = new Key('invoice-1');
        $store->save($first);
        $store->putOffExpiration($first, 30);
        $second = new Key('invoice-1');
        self::assertNotNull(self::thrown(fn () => $store->save($second)), 'a second Key while the first holds');
        $this->fastForward(300);
        $store->save($second);
        self::assertTrue($store->exists($second), 'the second Key after the first lease ran out');
    }

    public function testTheLaravelProviderSeesTheLeaseExpire(): void
    {
        Frameworks::require(Lock::class, 'php-laravel-framework');
        $locks = new LeaseGateLockProvider($this->client());
        self::assertTrue($locks->lock('nightly', 30)->get(), 'the first lock');
        $other = $locks->lock('nightly', 30);
        self::assertFalse($other->get(), 'another owner while it is held');
        $this->fastForward(30);
        self::assertTrue($other->get(), 'another owner after the lease ran out');
    }

    private static function thrown(callable $fn): ?\Throwable
    {
        try {
            $fn();
        } catch (\Throwable $t) {
            return $t;
        }
        return null;
    }
}
