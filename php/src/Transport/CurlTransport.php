<?php

declare(strict_types=1);

namespace LeaseGate\Transport;

use LeaseGate\TransportException;

/**
 * Transport on ext-curl, used by default when the extension is loaded.
 * Like StreamTransport it keeps the connection of its last call for the
 * next GET, HEAD or DELETE, and opens a fresh one for every other method
 * (CURLOPT_FRESH_CONNECT): libcurl sends a request again when a reused
 * connection turns out closed, which must never happen to a POST.
 */
final class CurlTransport implements Transport
{
    private ?\CurlHandle $handle = null;

    public static function available(): bool
    {
        return extension_loaded('curl');
    }

    public function send(
        string $method,
        string $url,
        array $headers,
        ?string $body,
        float $timeout,
        float $connectTimeout = Transport::CONNECT_TIMEOUT,
        ?string $unixSocket = null,
    ): Response {
        if (!self::available()) {
            throw new TransportException('leasegate: the curl extension is not loaded; use StreamTransport');
        }
        $lines = ['Expect:'];
        foreach ($headers as $name => $value) {
            $lines[] = $name . ': ' . $value;
        }
        $received = [];
        $handle = $this->handle ??= curl_init();
        curl_reset($handle);
        $options = [
            CURLOPT_URL => $url,
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_FOLLOWLOCATION => false,
            CURLOPT_FRESH_CONNECT => !in_array($method, ['GET', 'HEAD', 'DELETE'], true),
            CURLOPT_HTTPHEADER => $lines,
            CURLOPT_TIMEOUT_MS => max(1, (int) ceil($timeout * 1000)),
            CURLOPT_CONNECTTIMEOUT_MS => max(1, (int) ceil(min($timeout, $connectTimeout) * 1000)),
            CURLOPT_HEADERFUNCTION => static function ($ch, string $line) use (&$received): int {
                $received[] = $line;
                return strlen($line);
            },
        ];
        if (defined('CURLOPT_PROTOCOLS_STR')) {
            $options[CURLOPT_PROTOCOLS_STR] = 'http,https';
        }
        if ($unixSocket !== null) {
            $options[CURLOPT_UNIX_SOCKET_PATH] = $unixSocket;
        }
        if ($body !== null) {
            $options[CURLOPT_POSTFIELDS] = $body;
        } elseif ($method !== 'GET' && $method !== 'HEAD') {
            $lines[] = 'Content-Length: 0';
            $options[CURLOPT_HTTPHEADER] = $lines;
        }
        curl_setopt_array($handle, $options);
        $data = curl_exec($handle);
        $errno = curl_errno($handle);
        $error = curl_error($handle);
        if ($errno !== 0 || !is_string($data)) {
            throw TransportException::request($method, $url, sprintf('curl error %d: %s', $errno, $error));
        }
        return Response::fromHeaderLines($received, $data)
            ?? throw TransportException::request($method, $url, 'no HTTP status line in the answer');
    }
}
