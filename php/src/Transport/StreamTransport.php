<?php

declare(strict_types=1);

namespace LeaseGate\Transport;

use LeaseGate\TransportException;

/**
 * Transport on PHP's stream sockets: no extension needed beyond the
 * standard ones (https:// also needs openssl), and no allow_url_fopen.
 * It sends one HTTP/1.0 request per connection (so the answer is never
 * chunked and ends when the gateway closes the connection), over TCP, TLS
 * for https://, or the Unix domain socket given to send().
 */
final class StreamTransport implements Transport
{
    public function send(
        string $method,
        string $url,
        array $headers,
        ?string $body,
        float $timeout,
        float $connectTimeout = Transport::CONNECT_TIMEOUT,
        ?string $unixSocket = null,
    ): Response {
        $deadline = microtime(true) + $timeout;
        $parts = parse_url($url);
        $scheme = strtolower((string) ($parts['scheme'] ?? ''));
        if (!is_array($parts) || !isset($parts['host']) || ($scheme !== 'http' && $scheme !== 'https')) {
            throw TransportException::request($method, $url, 'not an http:// or https:// URL');
        }
        $host = $parts['host'];
        $port = $parts['port'] ?? ($scheme === 'https' ? 443 : 80);
        $target = $unixSocket !== null
            ? 'unix://' . $unixSocket
            : ($scheme === 'https' ? 'tls://' : 'tcp://') . $host . ':' . $port;
        $context = stream_context_create(['ssl' => ['peer_name' => trim($host, '[]'), 'SNI_enabled' => true]]);

        $path = ($parts['path'] ?? '/') . (isset($parts['query']) ? '?' . $parts['query'] : '');
        $lines = [sprintf('%s %s HTTP/1.0', $method, $path)];
        $lines[] = 'Host: ' . $host . (isset($parts['port']) ? ':' . $parts['port'] : '');
        if (isset($parts['user']) && !isset($headers['Authorization'])) {
            $auth = rawurldecode($parts['user']) . ':' . rawurldecode($parts['pass'] ?? '');
            $lines[] = 'Authorization: Basic ' . base64_encode($auth);
        }
        foreach ($headers as $name => $value) {
            $lines[] = $name . ': ' . $value;
        }
        if ($body !== null || ($method !== 'GET' && $method !== 'HEAD')) {
            $lines[] = 'Content-Length: ' . strlen($body ?? '');
        }
        $request = implode("\r\n", $lines) . "\r\n\r\n" . ($body ?? '');

        $warning = null;
        set_error_handler(static function (int $errno, string $message) use (&$warning): bool {
            $warning = $message;
            return true;
        });
        try {
            $wait = max(0.001, min($connectTimeout, $timeout));
            $socket = stream_socket_client($target, $errno, $error, $wait, STREAM_CLIENT_CONNECT, $context);
            if ($socket === false) {
                $why = $error !== '' ? $error : ($warning ?? 'could not connect');
                throw TransportException::request($method, $url, sprintf('connect: %s', $why));
            }
            try {
                $data = self::exchange($socket, $request, $deadline);
            } finally {
                fclose($socket);
            }
        } finally {
            restore_error_handler();
        }
        if ($data === null) {
            throw TransportException::request($method, $url, sprintf('timed out after %.1f s', $timeout));
        }
        $end = strpos($data, "\r\n\r\n");
        if ($end === false) {
            throw TransportException::request(
                $method,
                $url,
                $data === '' ? 'the connection closed without an answer' : 'incomplete answer',
            );
        }
        return Response::fromHeaderLines(explode("\r\n", substr($data, 0, $end)), substr($data, $end + 4))
            ?? throw TransportException::request($method, $url, 'no HTTP status line in the answer');
    }

    /**
     * Writes $request and reads until the peer closes; null when $deadline
     * passes first.
     *
     * @param resource $socket
     */
    private static function exchange($socket, string $request, float $deadline): ?string
    {
        $sent = 0;
        while ($sent < strlen($request)) {
            if (!self::timeLeft($socket, $deadline)) {
                return null;
            }
            $n = fwrite($socket, substr($request, $sent));
            if ($n === false || ($n === 0 && stream_get_meta_data($socket)['timed_out'])) {
                return $n === false ? '' : null;
            }
            $sent += $n;
        }
        $data = '';
        while (!feof($socket)) {
            if (!self::timeLeft($socket, $deadline)) {
                return null;
            }
            $chunk = fread($socket, 65536);
            if ($chunk === false) {
                break;
            }
            if ($chunk === '' && stream_get_meta_data($socket)['timed_out']) {
                return null;
            }
            $data .= $chunk;
        }
        return $data;
    }

    /** @param resource $socket */
    private static function timeLeft($socket, float $deadline): bool
    {
        $left = $deadline - microtime(true);
        if ($left <= 0) {
            return false;
        }
        stream_set_timeout($socket, (int) $left, (int) (($left - (int) $left) * 1_000_000));
        return true;
    }
}
