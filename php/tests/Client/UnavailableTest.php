<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Client;
use LeaseGate\Lock;
use LeaseGate\ProblemException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\TransportException;
use LeaseGate\UnavailableException;

/** Redis down -> UnavailableException, no gateway -> TransportException */
final class UnavailableTest extends TestCase
{
    public function testRedisDownAndNoGateway(): void
    {
        $dead = new Client(Gateway::deadUrl(), null, Gateway::transport(), 3.0);
        $e = self::throws(TransportException::class, fn () => $dead->acquire('r', 'o', 30), 'no gateway listening');
        self::assertTrue($e === null || !($e instanceof ProblemException), 'a transport error is not a problem');
        $withPassword = new Client(str_replace('://', '://user:secret@', Gateway::deadUrl()), null, Gateway::transport(), 3.0);
        $e = self::throws(TransportException::class, fn () => $withPassword->acquire('r', 'o', 30), 'no gateway at a URL with user:password@');
        self::assertTrue($e !== null && !str_contains($e->getMessage(), 'secret'), 'the message drops user:password@: ' . self::show($e?->getMessage()));

        $down = Gateway::client(Gateway::downUrl());
        $e = self::throws(UnavailableException::class, fn () => $down->acquire(Gateway::name('down'), 'o', 30), 'acquire with Redis down');
        self::eq($e?->status, 503, 'status 503');
        self::assertTrue($e !== null && $e->retryAfter !== null && $e->retryAfter >= 1, 'Retry-After given: ' . self::show($e?->retryAfter));
        self::throws(UnavailableException::class, fn () => $down->status(Gateway::name('down')), 'status with Redis down is 503, not 404');
        self::throws(UnavailableException::class, fn () => $down->release(Gateway::name('down'), 'o'), 'release with Redis down is 503, not 404');

        // Redis is known down by now: each call is answered at once, not
        // after the gateway's request timeout (5 s each before v1.2).
        $start = microtime(true);
        for ($i = 0; $i < 5; $i++) {
            self::throws(UnavailableException::class, fn () => $down->status(Gateway::name('down')), "call $i with Redis known down");
        }
        $took = microtime(true) - $start;
        self::assertLessThan(2.0, $took, sprintf('five calls with Redis known down took %.3f s, want them at once', $took));
    }

    public function testUserLocksWithRedisDownNeverAcquire(): void
    {
        if (Gateway::downUrl() === null) {
            echo "   (LEASEGATE_DOWN_URL not set: skipped)\n";
            return;
        }
        $down = Gateway::client(Gateway::downUrl());
        $e = self::throws(UnavailableException::class, fn () => $down->addUserLock('n', Gateway::name('down')), 'addUserLock with Redis down');
        self::assertTrue($e !== null && $e->retryAfter !== null && $e->retryAfter >= 1, 'Retry-After given: ' . self::show($e?->retryAfter));
        self::throws(UnavailableException::class, fn () => (new Lock(1, 'n', $down))->addUserLock(), 'Lock::addUserLock with Redis down throws, never true');
        $dead = new Client(Gateway::deadUrl(), null, Gateway::transport(), 3.0);
        self::throws(TransportException::class, fn () => (new Lock(1, 'n', $dead))->addUserLock(), 'Lock::addUserLock with no gateway throws');
    }
}
