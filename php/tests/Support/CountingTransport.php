<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Support;

use LeaseGate\Transport\Response;
use LeaseGate\Transport\Transport;

/** Passes requests on to a real transport and records method and path of each. */
final class CountingTransport implements Transport
{
    /** @var list<string> "METHOD /path" of every request sent */
    public array $requests = [];

    public function __construct(private readonly Transport $inner)
    {
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
        $this->requests[] = $method . ' ' . (string) parse_url($url, PHP_URL_PATH);
        return $this->inner->send($method, $url, $headers, $body, $timeout, $connectTimeout, $unixSocket);
    }
}
