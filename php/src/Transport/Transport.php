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
    /** Seconds to wait for a connection, unless the caller says otherwise. */
    public const CONNECT_TIMEOUT = 1.0;

    /**
     * @param array<string, string> $headers name => value
     * @param float $timeout seconds for the whole exchange, connecting included
     * @param float $connectTimeout seconds to wait for the connection (at most $timeout)
     * @param ?string $unixSocket the path of a Unix domain socket to connect to
     *        instead of the URL's host and port (the URL still gives the path and Host)
     *
     * @throws TransportException
     */
    public function send(
        string $method,
        string $url,
        array $headers,
        ?string $body,
        float $timeout,
        float $connectTimeout = self::CONNECT_TIMEOUT,
        ?string $unixSocket = null,
    ): Response;
}
