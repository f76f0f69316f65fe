<?php

declare(strict_types=1);

namespace LeaseGate\Transport;

/**
 * One HTTP answer: status code, headers (names lower-cased; a repeated
 * header keeps its last value) and the raw body.
 */
final class Response
{
    /**
     * @param array<string, string> $headers lower-cased name => value
     */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly string $body,
    ) {
    }

    public function header(string $name): ?string
    {
        return $this->headers[strtolower($name)] ?? null;
    }

    /**
     * Builds a Response from raw header lines (status line first). When the
     * lines hold several responses (an interim "100 Continue", say), the
     * last one wins.
     *
     * @param list<string> $lines
     */
    public static function fromHeaderLines(array $lines, string $body): ?self
    {
        $status = null;
        $headers = [];
        foreach ($lines as $line) {
            $line = rtrim($line, "\r\n");
            if (preg_match('#^HTTP/\d(?:\.\d)?\s+(\d{3})#', $line, $m) === 1) {
                $status = (int) $m[1];
                $headers = [];
                continue;
            }
            $colon = strpos($line, ':');
            if ($colon === false || $colon === 0) {
                continue;
            }
            $headers[strtolower(trim(substr($line, 0, $colon)))] = trim(substr($line, $colon + 1));
        }
        if ($status === null) {
            return null;
        }
        return new self($status, $headers, $body);
    }
}
