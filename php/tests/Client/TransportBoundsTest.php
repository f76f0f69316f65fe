<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Client;
use LeaseGate\TransportException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** the request bound ends a call to a gateway that accepts but never answers */
final class TransportBoundsTest extends TestCase
{
    public function testASilentGatewayCostsTheRequestBoundNotMore(): void
    {
        // Listening, never accepting: the kernel completes the connection,
        // nothing ever answers.
        $silent = stream_socket_server('tcp://127.0.0.1:0');
        self::assertNotFalse($silent, 'listen on a free port');
        $url = 'http://' . stream_socket_get_name($silent, false);
        try {
            $c = new Client($url, null, Gateway::transport(), 0.5, null, 0.2);
            $start = microtime(true);
            self::throws(TransportException::class, fn () => $c->acquire('r', 'o', 5), 'acquire on a silent gateway');
            $took = microtime(true) - $start;
            self::assertTrue($took >= 0.45 && $took < 3.0, sprintf('the call ended after the 0.5 s bound, took %.3f s', $took));
        } finally {
            fclose($silent);
        }
    }
}
