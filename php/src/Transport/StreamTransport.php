<?php

declare(strict_types=1);

namespace LeaseGate\Transport;

use LeaseGate\TransportException;

/**
 * Transport on PHP's built-in http:// stream wrapper: no extension needed
 * beyond the standard ones (https:// also needs openssl), but it needs
 * allow_url_fopen=On (PHP's default). ignore_errors makes 4xx and 5xx
 * answers readable like any other.
 */
final class StreamTransport implements Transport
{
    public function send(string $method, string $url, array $headers, ?string $body, float $timeout): Response
    {
        $lines = [];
        foreach ($headers as $name => $value) {
            $lines[] = $name . ': ' . $value;
        }
        $lines[] = 'Connection: close';
        if ($body !== null || ($method !== 'GET' && $method !== 'HEAD')) {
            $lines[] = 'Content-Length: ' . strlen($body ?? '');
        }
        $http = [
            'method' => $method,
            'header' => implode("\r\n", $lines),
            'ignore_errors' => true,
            'follow_location' => 0,
            'protocol_version' => 1.1,
            'timeout' => $timeout,
        ];
        if ($body !== null) {
            $http['content'] = $body;
        }
        $context = stream_context_create(['http' => $http]);

        $warning = null;
        set_error_handler(static function (int $errno, string $message) use (&$warning): bool {
            $warning = $message;
            return true;
        });
        try {
            $stream = fopen($url, 'rb', false, $context);
            if ($stream === false) {
                throw TransportException::request($method, $url, $warning ?? 'could not connect');
            }
            try {
                $data = stream_get_contents($stream);
                $meta = stream_get_meta_data($stream);
            } finally {
                fclose($stream);
            }
        } finally {
            restore_error_handler();
        }
        if ($data === false || ($meta['timed_out'] ?? false)) {
            throw TransportException::request(
                $method,
                $url,
                ($meta['timed_out'] ?? false) ? sprintf('timed out after %.1f s', $timeout) : ($warning ?? 'read failed')
            );
        }
        /** @var list<string> $headerLines */
        $headerLines = is_array($meta['wrapper_data'] ?? null) ? $meta['wrapper_data'] : [];
        return Response::fromHeaderLines($headerLines, $data)
            ?? throw TransportException::request($method, $url, 'no HTTP status line in the answer');
    }
}
