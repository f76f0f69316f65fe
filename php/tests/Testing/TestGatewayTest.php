<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Testing;

use LeaseGate\Testing\GatewayTestCase;
use LeaseGate\Testing\TestGateway;
use LeaseGate\TransportException;

/**
 * TestGateway on its own: ready from its address file, stopped at once.
 * (A GatewayTestCase, so that it skips or fails as the fixture does when
 * there is no binary.)
 */
final class TestGatewayTest extends GatewayTestCase
{
    public function testStopEndsTheGatewayAtOnce(): void
    {
        $gw = TestGateway::start();
        $client = $gw->client();
        self::assertTrue($client->acquire('stop-test', 'a', 60)->acquired, 'the gateway answers once start() returns');
        $start = microtime(true);
        $gw->stop();
        $took = microtime(true) - $start;
        // 0.01 s on an idle machine; a drain would take its 10 s.
        self::assertLessThan(5.0, $took, sprintf('stop() took %.3f s: the test gateway must not drain', $took));
        $gw->stop();
        try {
            $client->status('stop-test');
            self::fail('the stopped gateway still answers');
        } catch (TransportException) {
            $this->addToAssertionCount(1);
        }
    }

    public function testTheGatewayMayListenOnAUnixSocket(): void
    {
        $dir = sys_get_temp_dir() . '/leasegate-php-' . bin2hex(random_bytes(6));
        self::assertTrue(mkdir($dir, 0700), 'a directory for the socket');
        try {
            $gw = TestGateway::start(['--addr', 'unix:' . $dir . '/gw.sock']);
            self::assertSame('unix:' . $dir . '/gw.sock', $gw->url(), 'the URL from the address file');
            $client = $gw->client();
            $r = $client->acquire('unix-test', 'a', 60);
            self::assertTrue($r->acquired, 'acquired over the socket');
            $client->release('unix-test', 'a', $r->lease?->token);
            $gw->fastForward(1);
            $gw->stop();
            self::assertFileDoesNotExist($dir . '/gw.sock', 'the gateway removed its socket');
        } finally {
            @unlink($dir . '/gw.sock');
            @rmdir($dir);
        }
    }
}
