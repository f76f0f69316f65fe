<?php

declare(strict_types=1);

namespace LeaseGate\Transport;

use LeaseGate\TransportException;

/**
 * Transport on PHP's stream sockets: no extension needed beyond the
 * standard ones (https:// also needs openssl), and no allow_url_fopen.
 * HTTP/1.1 over TCP, TLS for https://, or the Unix domain socket given to
 * send(). It keeps the connection of its last call open for the next one
 * when that is a GET, HEAD or DELETE (so a release after an acquire pays
 * no new connection), and opens a fresh one for every other method: a
 * POST is never sent on a connection the gateway may have closed in the
 * meantime, and is never sent twice. The connection closes with the
 * transport (a PHP-FPM request's client), or when the gateway says so.
 */
final class StreamTransport implements Transport
{
    /** @var resource|null the kept connection */
    private $conn = null;

    /** Where $conn leads. */
    private string $connTarget = '';

    public function __destruct()
    {
        $this->drop();
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

        $path = ($parts['path'] ?? '/') . (isset($parts['query']) ? '?' . $parts['query'] : '');
        $lines = [sprintf('%s %s HTTP/1.1', $method, $path)];
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
            $repeatable = in_array($method, ['GET', 'HEAD', 'DELETE'], true);
            if ($repeatable && $this->conn !== null && $this->connTarget === $target && self::idle($this->conn)) {
                $answer = self::exchange($this->conn, $request, $method, $deadline);
                if ($answer !== '') {
                    return $this->finish($answer, $method, $url, $timeout);
                }
                // The gateway closed the kept connection before reading: a
                // GET, HEAD or DELETE may go again on a new one.
            }
            $this->drop();
            $context = stream_context_create(['ssl' => ['peer_name' => trim($host, '[]'), 'SNI_enabled' => true]]);
            $wait = max(0.001, min($connectTimeout, $timeout, $deadline - microtime(true)));
            $socket = stream_socket_client($target, $errno, $error, $wait, STREAM_CLIENT_CONNECT, $context);
            if ($socket === false) {
                $why = $error !== '' ? $error : ($warning ?? 'could not connect');
                throw TransportException::request($method, $url, sprintf('connect: %s', $why));
            }
            $this->conn = $socket;
            $this->connTarget = $target;
            return $this->finish(self::exchange($socket, $request, $method, $deadline), $method, $url, $timeout);
        } finally {
            restore_error_handler();
        }
    }

    /**
     * @param array{0: Response, 1: bool}|string|null $answer
     */
    private function finish(array|string|null $answer, string $method, string $url, float $timeout): Response
    {
        if (!is_array($answer)) {
            $this->drop();
        }
        if ($answer === null) {
            throw TransportException::request($method, $url, sprintf('timed out after %.1f s', $timeout));
        }
        if ($answer === '') {
            throw TransportException::request($method, $url, 'the connection closed without an answer');
        }
        if (is_string($answer)) {
            throw TransportException::request($method, $url, $answer);
        }
        if (!$answer[1]) {
            $this->drop();
        }
        return $answer[0];
    }

    private function drop(): void
    {
        if ($this->conn !== null) {
            @fclose($this->conn);
            $this->conn = null;
        }
    }

    /**
     * Whether a kept connection is still open and quiet (the gateway has
     * neither closed it nor sent anything).
     *
     * @param resource $socket
     */
    private static function idle($socket): bool
    {
        $read = [$socket];
        $none = null;
        return @stream_select($read, $none, $none, 0) === 0;
    }

    /**
     * Writes $request and reads one answer. Returns the Response and
     * whether the connection may carry another request; '' when the
     * connection closed before any answer; null when $deadline passed;
     * another string says what was wrong with the answer.
     *
     * @param resource $socket
     * @return array{0: Response, 1: bool}|string|null
     */
    private static function exchange($socket, string $request, string $method, float $deadline): array|string|null
    {
        for ($sent = 0; $sent < strlen($request); $sent += $n) {
            if (!self::timeLeft($socket, $deadline)) {
                return null;
            }
            $n = @fwrite($socket, substr($request, $sent));
            if ($n === false || $n === 0) {
                return stream_get_meta_data($socket)['timed_out'] ? null : '';
            }
        }
        $buffer = '';
        while (($end = strpos($buffer, "\r\n\r\n")) === false) {
            $more = self::read($socket, $deadline);
            if (!is_string($more)) {
                return $more === null ? null : ($buffer === '' ? '' : 'incomplete answer');
            }
            $buffer .= $more;
        }
        $response = Response::fromHeaderLines(explode("\r\n", substr($buffer, 0, $end)), '');
        if ($response === null) {
            return 'no HTTP status line in the answer';
        }
        $rest = substr($buffer, $end + 4);
        $keep = !str_starts_with($buffer, 'HTTP/1.0') && strtolower($response->header('Connection') ?? '') !== 'close';
        $status = $response->status;
        if ($method === 'HEAD' || $status === 204 || $status === 304 || ($status >= 100 && $status < 200)) {
            $body = '';
        } elseif (strtolower($response->header('Transfer-Encoding') ?? '') === 'chunked') {
            $body = self::chunked($socket, $rest, $deadline);
        } elseif (($length = $response->header('Content-Length')) !== null && ctype_digit($length)) {
            while (strlen($rest) < (int) $length) {
                $more = self::read($socket, $deadline);
                if (!is_string($more)) {
                    return $more === null ? null : 'the answer ended early';
                }
                $rest .= $more;
            }
            $body = substr($rest, 0, (int) $length);
        } else {
            // No length: the body ends where the gateway closes.
            $keep = false;
            while (is_string($more = self::read($socket, $deadline))) {
                $rest .= $more;
            }
            $body = $more === null ? null : $rest;
        }
        if (!is_string($body)) {
            return $body === null ? null : 'the answer ended early';
        }
        return [new Response($status, $response->headers, $body), $keep];
    }

    /**
     * Decodes a chunked body whose first bytes are $rest.
     *
     * @param resource $socket
     * @return string|false|null the body; false when it ended early; null on the deadline
     */
    private static function chunked($socket, string $rest, float $deadline): string|false|null
    {
        $body = '';
        while (true) {
            while (($eol = strpos($rest, "\r\n")) === false) {
                $more = self::read($socket, $deadline);
                if (!is_string($more)) {
                    return $more;
                }
                $rest .= $more;
            }
            $size = hexdec(trim(explode(';', substr($rest, 0, $eol))[0]));
            $rest = substr($rest, $eol + 2);
            // The chunk, its CRLF; after the last (size 0) chunk, the final CRLF.
            while (strlen($rest) < $size + 2) {
                $more = self::read($socket, $deadline);
                if (!is_string($more)) {
                    return $more;
                }
                $rest .= $more;
            }
            if ($size === 0) {
                return $body;
            }
            $body .= substr($rest, 0, (int) $size);
            $rest = substr($rest, (int) $size + 2);
        }
    }

    /**
     * The next bytes from $socket: false at its end, null on the deadline.
     *
     * @param resource $socket
     */
    private static function read($socket, float $deadline): string|false|null
    {
        if (!self::timeLeft($socket, $deadline)) {
            return null;
        }
        $chunk = @fread($socket, 65536);
        if ($chunk === false || $chunk === '') {
            if (stream_get_meta_data($socket)['timed_out']) {
                return null;
            }
            return feof($socket) || $chunk === false ? false : '';
        }
        return $chunk;
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
