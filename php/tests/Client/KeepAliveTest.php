<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Client;
use LeaseGate\TransportException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\Helper;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\Transport\Transport;

/**
 * A transport keeps its connection for a following GET, HEAD or DELETE,
 * never sends a POST on a kept one, and sends a GET or DELETE again only
 * when the kept connection closed before any answer.
 */
final class KeepAliveTest extends TestCase
{
    private Helper $server;
    private string $url;

    protected function setUp(): void
    {
        $this->server = new Helper('http_server.php', []);
        $this->url = 'http://' . $this->server->line();
    }

    protected function tearDown(): void
    {
        [$status, $out] = $this->server->finish();
        self::eq($status, 0, 'the test server ends cleanly: ' . $out);
        parent::tearDown();
    }

    /** @return array{conn: int, method: string, body: string} */
    private function call(Transport $t, string $method, string $path, ?string $body = null): array
    {
        $r = $t->send($method, $this->url . $path, ['Content-Type' => 'application/json'], $body, 5.0);
        self::eq($r->status, 200, "$method $path status");
        $out = json_decode($r->body, true);
        self::assertIsArray($out, "$method $path: a JSON answer: " . $r->body);
        return $out;
    }

    public function testConnectionsAreKeptOnlyForRepeatableMethods(): void
    {
        $t = Gateway::transport();
        $first = $this->call($t, 'POST', '/locks/a', '{"owner":"o"}');
        self::eq([$first['method'], $first['body']], ['POST', '{"owner":"o"}'], 'the POST and its body');
        self::eq($this->call($t, 'DELETE', '/locks/a?owner=o')['conn'], $first['conn'], 'a DELETE after it reuses the connection');
        self::eq($this->call($t, 'GET', '/locks/a')['conn'], $first['conn'], 'so does a GET');
        $post = $this->call($t, 'POST', '/locks/b', '{}')['conn'];
        self::assertNotSame($first['conn'], $post, 'a POST opens a connection of its own');
        // (curl keeps both connections, streams the last one.)
        $kept = [$first['conn'], $post];
        $chunked = $this->call($t, 'GET', '/chunked')['conn'];
        self::assertContains($chunked, $kept, 'a chunked answer on a kept connection');
        self::assertContains($this->call($t, 'GET', '/x')['conn'], $kept, 'kept after the chunked answer, read whole');
        $closed = $this->call($t, 'GET', '/close')['conn'];
        self::assertNotSame($closed, $this->call($t, 'GET', '/x')['conn'], 'not the connection Connection: close ended');
    }

    public function testAKeptConnectionTheServerClosedIsReplacedForADelete(): void
    {
        $t = Gateway::transport();
        $a = $this->call($t, 'GET', '/idle-close')['conn']; // closed right after the answer
        usleep(50_000); // the close reaches the client (no signal to wait on)
        self::assertNotSame($a, $this->call($t, 'DELETE', '/locks/a')['conn'], 'the DELETE goes on a new connection');
    }

    public function testAUnixSocketBaseUrlReachesTheSocket(): void
    {
        $dir = sys_get_temp_dir() . '/leasegate-php-' . bin2hex(random_bytes(6));
        self::assertTrue(mkdir($dir, 0700), 'a directory for the socket');
        $onSocket = new Helper('http_server.php', [$dir . '/gw.sock']);
        try {
            $url = $onSocket->line();
            self::eq($url, 'unix:' . $dir . '/gw.sock', 'the server listens on the socket');
            $c = new Client($url, null, Gateway::transport());
            $out = $c->request('POST', '/locks/a%20b', ['owner' => 'o']);
            self::assertIsArray($out);
            self::eq([$out['method'], $out['target'], $out['body']], ['POST', '/locks/a%20b', '{"owner":"o"}'], 'the request on the socket');
            $again = $c->request('DELETE', '/locks/a%20b');
            self::assertIsArray($again);
            self::eq($again['conn'], $out['conn'], 'the DELETE on the same connection');
        } finally {
            $onSocket->finish();
            @unlink($dir . '/gw.sock');
            @rmdir($dir);
        }
    }

    public function testAConnectionClosedWithoutAnAnswerIsATransportError(): void
    {
        $t = Gateway::transport();
        self::throws(TransportException::class, fn () => $t->send('POST', $this->url . '/drop', [], '{}', 5.0), 'POST, no answer');
        self::eq($this->call($t, 'POST', '/x', '{}')['method'], 'POST', 'the transport works on afterwards');
    }
}
