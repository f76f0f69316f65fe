<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Support;

use LeaseGate\Transport\Response;
use LeaseGate\Transport\Transport;

/** Records requests and answers them from a queue (offline tests). */
final class FakeTransport implements Transport
{
    /** @var list<array{method: string, url: string, headers: array<string, string>, body: ?string, timeout: float, connectTimeout: float, unixSocket: ?string}> */
    public array $requests = [];
    /** @var list<Response> */
    private array $queue = [];

    /** @param array<string, string> $headers */
    public function answer(int $status, string $body = '', array $headers = []): self
    {
        $lower = [];
        foreach ($headers as $k => $v) {
            $lower[strtolower($k)] = $v;
        }
        $this->queue[] = new Response($status, $lower, $body);
        return $this;
    }

    public function problem(int $status, string $slug, array $extra = [], array $headers = []): self
    {
        $body = array_merge([
            'type' => 'https://leasegate.dev/problems/' . $slug,
            'title' => 'Title',
            'status' => $status,
            'detail' => 'detail of ' . $slug,
        ], $extra);
        return $this->answer($status, (string) json_encode($body), $headers + ['Content-Type' => 'application/problem+json']);
    }

    public function send(
        string $method,
        string $url,
        array $headers,
        ?string $body,
        float $timeout,
        float $connectTimeout = Transport::CONNECT_TIMEOUT,
        ?string $unixSocket = null,
    ): Response
    {
        $this->requests[] = compact('method', 'url', 'headers', 'body', 'timeout', 'connectTimeout', 'unixSocket');
        $r = array_shift($this->queue);
        if ($r === null) {
            throw new \LogicException("FakeTransport: no answer queued for $method $url");
        }
        return $r;
    }

    /** @return array{method: string, url: string, headers: array<string, string>, body: ?string, timeout: float, connectTimeout: float, unixSocket: ?string} */
    public function last(): array
    {
        $r = end($this->requests);
        if ($r === false) {
            throw new \LogicException('FakeTransport: no request sent');
        }
        return $r;
    }
}
