<?php

declare(strict_types=1);

namespace LeaseGate\Testing;

use LeaseGate\Client;

/**
 * A `leasegate serve` process for tests: the embedded in-memory store on
 * a free loopback port, started with --embedded-redis-test-clock so that
 * fastForward() can move the store's clock (docs/testing.md).
 *
 * The binary is $LEASEGATE_BIN, else `leasegate` on PATH. start() throws
 * GatewayNotFound when LEASEGATE_BIN is unset and PATH has none (nothing
 * was configured), and \RuntimeException when LEASEGATE_BIN names no
 * executable or the gateway does not start: a configuration that is there
 * but wrong is an error, never a reason to skip.
 *
 * The gateway is ready when it has written its address to the file named
 * by `--addr-file` (the address and a newline, written atomically once it
 * serves). It runs with `--drain-delay 0`, so stop() ends it at once.
 * In open mode (no --api-keys among $args) any client may move the clock.
 */
final class TestGateway
{
    private static ?self $shared = null;

    /** @param resource $process */
    private function __construct(
        private $process,
        private readonly string $url,
        private readonly string $dir,
    ) {
    }

    /**
     * Starts a gateway; $args are more `leasegate serve` flags (e.g.
     * ['--max-wait', '1m']). Waits until it serves (at most $timeout s).
     *
     * @param list<string> $args
     *
     * @throws GatewayNotFound when nothing names a leasegate binary
     * @throws \RuntimeException when LEASEGATE_BIN is wrong or the gateway does not start
     */
    public static function start(array $args = [], float $timeout = 30.0): self
    {
        $bin = self::binary();
        $dir = sys_get_temp_dir() . '/leasegate-test-' . bin2hex(random_bytes(8));
        if (!@mkdir($dir, 0700)) {
            throw new \RuntimeException(sprintf('leasegate: cannot create the directory %s', $dir));
        }
        $addrFile = $dir . '/addr';
        $log = $dir . '/log';
        $cmd = [
            $bin, 'serve', '--addr', '127.0.0.1:0', '--addr-file', $addrFile, '--drain-delay', '0',
            '--embedded-redis-test-clock', ...$args,
        ];
        $io = [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']];
        $process = proc_open($cmd, $io, $pipes);
        if ($process === false) {
            self::remove($dir);
            throw new \RuntimeException(sprintf('leasegate: cannot run %s', $bin));
        }
        $deadline = microtime(true) + $timeout;
        while (true) {
            $addr = @file_get_contents($addrFile);
            if (is_string($addr) && str_ends_with($addr, "\n")) {
                $addr = trim($addr);
                $url = str_starts_with($addr, 'unix:') || str_contains($addr, '://') ? $addr : 'http://' . $addr;
                return new self($process, $url, $dir);
            }
            if (!proc_get_status($process)['running'] || microtime(true) > $deadline) {
                proc_terminate($process);
                proc_close($process);
                $output = (string) @file_get_contents($log);
                self::remove($dir);
                throw new \RuntimeException(sprintf("leasegate: %s serve did not start; its log:\n%s", $bin, $output));
            }
            usleep(5_000);
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

    /** The gateway's base URL, http://127.0.0.1:port (unix:/path on a Unix socket). */
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
        return (string) @file_get_contents($this->dir . '/log');
    }

    /** Stops the gateway (SIGTERM, then waits for it). Safe to call twice. */
    public function stop(): void
    {
        if (!is_resource($this->process)) {
            return;
        }
        proc_terminate($this->process);
        proc_close($this->process);
        self::remove($this->dir);
    }

    /**
     * The leasegate binary: $LEASEGATE_BIN, else the first on PATH.
     *
     * @throws GatewayNotFound when LEASEGATE_BIN is unset and PATH has none
     * @throws \RuntimeException when LEASEGATE_BIN is set but names no executable file
     */
    public static function binary(): string
    {
        $bin = getenv('LEASEGATE_BIN');
        if (is_string($bin) && $bin !== '') {
            if (!is_file($bin) || !is_executable($bin)) {
                throw new \RuntimeException(sprintf('leasegate: LEASEGATE_BIN=%s is not an executable file', $bin));
            }
            return $bin;
        }
        foreach (explode(PATH_SEPARATOR, (string) getenv('PATH')) as $dir) {
            if ($dir !== '' && is_file($dir . '/leasegate') && is_executable($dir . '/leasegate')) {
                return $dir . '/leasegate';
            }
        }
        throw new GatewayNotFound(
            'no leasegate binary: LEASEGATE_BIN is unset and PATH has no leasegate '
            . '(go build -o leasegate ./cmd/leasegate in the leasegate repository)'
        );
    }

    private static function remove(string $dir): void
    {
        foreach (@scandir($dir) ?: [] as $name) {
            if ($name !== '.' && $name !== '..') {
                @unlink($dir . '/' . $name);
            }
        }
        @rmdir($dir);
    }
}
