<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Client;
use LeaseGate\Tests\Support\FakeTransport;
use LeaseGate\Tests\Support\TestCase;

/** the caller's traceparent goes with every request (fake transport, no gateway) */
final class TraceparentTest extends TestCase
{
    private const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    private const RELEASED = '{"acquired":false,"resource":"r","retry_after_ms":1}';

    public function testAFixedTraceparentIsSent(): void
    {
        $fake = new FakeTransport();
        $c = new Client('http://gw.example:8080', null, $fake, 5.0, self::PARENT);
        $fake->answer(200, self::RELEASED);
        $c->acquire('r', 'o', 5);
        self::eq($fake->last()['headers']['traceparent'] ?? null, self::PARENT, 'traceparent header');
    }

    public function testAClosureIsAskedBeforeEveryRequest(): void
    {
        $fake = new FakeTransport();
        $current = self::PARENT;
        $c = new Client('http://gw.example:8080', null, $fake, 5.0, function () use (&$current): ?string {
            return $current;
        });
        $fake->answer(200, self::RELEASED);
        $c->acquire('r', 'o', 5);
        self::eq($fake->last()['headers']['traceparent'] ?? null, self::PARENT, 'the closure\'s traceparent');

        $current = null;
        $fake->answer(200, self::RELEASED);
        $c->acquire('r', 'o', 5);
        self::eq(array_key_exists('traceparent', $fake->last()['headers']), false, 'no header when the closure returns null');

        $current = 'not-a-traceparent';
        $fake->answer(200, self::RELEASED);
        $c->acquire('r', 'o', 5);
        self::eq(array_key_exists('traceparent', $fake->last()['headers']), false, 'no header when the closure returns garbage');
    }

    public function testNoTraceparentByDefault(): void
    {
        $fake = new FakeTransport();
        $c = new Client('http://gw.example:8080', null, $fake);
        $fake->answer(200, self::RELEASED);
        $c->acquire('r', 'o', 5);
        self::eq(array_key_exists('traceparent', $fake->last()['headers']), false, 'no traceparent header');
    }

    public function testABadFixedTraceparentIsRefused(): void
    {
        foreach (['', '00-' . str_repeat('0', 32) . '-00f067aa0ba902b7-01', "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n"] as $bad) {
            try {
                new Client('http://gw.example:8080', null, new FakeTransport(), 5.0, $bad);
                self::fail('accepted traceparent ' . json_encode($bad));
            } catch (\InvalidArgumentException $e) {
                self::eq(str_contains($e->getMessage(), 'traceparent'), true, 'the error names traceparent');
            }
        }
    }
}
