<?php

declare(strict_types=1);

namespace LeaseGate\Testing;

use LeaseGate\Client;

/**
 * A `leasegate serve` process for tests: the embedded in-memory store on
 * a free loopback port, started with --embedded-redis-test-clock so that
 * fastForward() can move the store's clock (docs/testing.md).
 *
 * The binary is $LEASEGATE_BIN, else `leasegate` on PATH; start() throws
 * GatewayNotFound when neither has it (GatewayTestCase skips then).
 * In open mode (no --api-keys among $args) any client may move the clock.
 */
final class TestGateway
{
    private static ?self $shared = null;

    /** @param resource $process */
    private function __construct(
        private $process,
        private readonly string $url,
        private readonly string $log,
    ) {
    }

    /**
     * Starts a gateway; $args are more `leasegate serve` flags (e.g.
     * ['--max-wait', '1m']). Waits until it listens (at most $timeout s).
     *
     * @param list<string> $args
     *
     * @throws GatewayNotFound when there is no leasegate binary
     * @throws \RuntimeException when it does not start
     */
    public static function start(array $args = [], float $timeout = 30.0): self
    {
        $bin = self::binary();
        $log = tempnam(sys_get_temp_dir(), 'leasegate-test-');
        if ($log === false) {
            throw new \RuntimeException('leasegate: cannot create the gateway log file');
        }
        $cmd = [$bin, 'serve', '--addr', '127.0.0.1:0', '--embedded-redis-test-clock', ...$args];
        $process = proc_open(
            $cmd,
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']],
            $pipes,
        );
        if ($process === false) {
            throw new \RuntimeException(sprintf('leasegate: cannot run %s', $bin));
        }
        $deadline = microtime(true) + $timeout;
        while (true) {
            foreach (file($log, FILE_IGNORE_NEW_LINES) ?: [] as $line) {
                $entry = json_decode($line, true);
                if (
                    is_array($entry) && ($entry['msg'] ?? null) === 'leasegate listening'
                    && is_string($entry['addr'] ?? null)
                ) {
                    return new self($process, 'http://' . $entry['addr'], $log);
                }
            }
            if (!proc_get_status($process)['running'] || microtime(true) > $deadline) {
                proc_terminate($process);
                proc_close($process);
                throw new \RuntimeException(
                    sprintf("leasegate: %s serve did not start; its log:\n%s", $bin, (string) file_get_contents($log)),
                );
            }
            usleep(20_000);
        }
    }

    /**
     * One gateway for the whole PHP process (a test suite), started on
     * the first call and stopped when the process exits.
     *
     * @throws GatewayNotFound
     */
    public static function shared(): self
    {
        if (self::$shared === null) {
            self::$shared = self::start();
            register_shutdown_function(static function (): void {
                self::$shared?->stop();
            });
        }
        return self::$shared;
    }

    /** The gateway's base URL, http://127.0.0.1:port. */
    public function url(): string
    {
        return $this->url;
    }

    /** A client of the gateway ($apiKey for a gateway started with --api-keys). */
    public function client(?string $apiKey = null): Client
    {
        return new Client($this->url, $apiKey ?? '');
    }

    /**
     * Moves the store's clock $seconds ahead (whole milliseconds, at
     * least 0.001): leases and lock delays run out, user-lock windows end,
     * bans lift, and waiting acquires retry at once. The gateway's own
     * timers (wait_ms, request timeouts) keep the real clock. Returns the
     * store's time after the move. Needs an ops key when the gateway has
     * keys ($opsKey).
     *
     * @throws \LeaseGate\LeaseGateException as the client's calls do (404
     *         NotFoundException: the gateway was not started for tests)
     */
    public function fastForward(float $seconds, ?string $opsKey = null): \DateTimeImmutable
    {
        $out = $this->client($opsKey)->request(
            'POST',
            '/ops/test-clock',
            ['advance_ms' => (int) round($seconds * 1000)],
        );
        if (!is_array($out) || !is_string($out['now'] ?? null)) {
            throw new \RuntimeException('leasegate: moving the clock: the answer has no "now"');
        }
        return new \DateTimeImmutable($out['now']);
    }

    /** The gateway's log so far (JSON lines), for a failing test's message. */
    public function log(): string
    {
        return (string) @file_get_contents($this->log);
    }

    /** Stops the gateway (SIGTERM, then waits for it). Safe to call twice. */
    public function stop(): void
    {
        if (!is_resource($this->process)) {
            return;
        }
        proc_terminate($this->process);
        proc_close($this->process);
        @unlink($this->log);
    }

    /** The leasegate binary: $LEASEGATE_BIN, else the first on PATH. */
    public static function binary(): string
    {
        $bin = getenv('LEASEGATE_BIN');
        if (is_string($bin) && $bin !== '') {
            if (!is_file($bin) || !is_executable($bin)) {
                throw new GatewayNotFound(sprintf('LEASEGATE_BIN=%s is not an executable file', $bin));
            }
            return $bin;
        }
        foreach (explode(PATH_SEPARATOR, (string) getenv('PATH')) as $dir) {
            if ($dir !== '' && is_file($dir . '/leasegate') && is_executable($dir . '/leasegate')) {
                return $dir . '/leasegate';
            }
        }
        throw new GatewayNotFound(
            'no leasegate binary: set LEASEGATE_BIN to its path or put leasegate on PATH '
            . '(go build -o leasegate ./cmd/leasegate in the leasegate repository)',
        );
    }
}
