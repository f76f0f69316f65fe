<?php

declare(strict_types=1);

namespace LeaseGate\Transport;

use LeaseGate\TransportException;

/**
 * Sends one HTTP request. Implementations never follow redirects and
 * return every status code (4xx and 5xx included) as a Response; they
 * throw TransportException only when no HTTP answer arrived at all.
 */
interface Transport
{
    /**
     * @param array<string, string> $headers name => value
     * @param float $timeout seconds for the whole exchange
     *
     * @throws TransportException
     */
    public function send(string $method, string $url, array $headers, ?string $body, float $timeout): Response;
}
