<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Support;

use LeaseGate\Client;
use LeaseGate\LeaseGateException;
use LeaseGate\NotFoundException;
use LeaseGate\Testing\GatewayNotFound;
use LeaseGate\Testing\TestGateway;
use LeaseGate\Transport\CurlTransport;
use LeaseGate\Transport\StreamTransport;
use LeaseGate\Transport\Transport;
use PHPUnit\Framework\Assert;

/**
 * The gateways php_test.go started, from the environment:
 * LEASEGATE_URL (live), LEASEGATE_DOWN_URL (its Redis is down),
 * LEASEGATE_DEAD_URL (nothing listens) and LEASEGATE_TRANSPORT
 * (stream or curl; default: the client's own choice).
 */
final class Gateway
{
    private static ?string $prefix = null;

    /** @var array<string, true> users a test flagged or banned: cleared by clearFlagged() */
    private static array $toClear = [];

    /**
     * The live gateway's URL: LEASEGATE_URL, else a gateway started for
     * this PHPUnit run (TestGateway::shared(), from LEASEGATE_BIN or PATH);
     * without either the test is skipped (failed under CI=true).
     */
    public static function url(): string
    {
        $url = self::env('LEASEGATE_URL');
        if ($url !== null) {
            return $url;
        }
        try {
            return TestGateway::shared()->url();
        } catch (GatewayNotFound $e) {
            self::missing('LEASEGATE_URL', $e->getMessage());
        }
    }

    public static function downUrl(): string
    {
        return self::env('LEASEGATE_DOWN_URL') ?? self::missing('LEASEGATE_DOWN_URL');
    }

    public static function deadUrl(): string
    {
        return self::env('LEASEGATE_DEAD_URL') ?? 'http://127.0.0.1:1';
    }

    public static function transportName(): string
    {
        return self::env('LEASEGATE_TRANSPORT') ?? (CurlTransport::available() ? 'curl' : 'stream');
    }

    public static function transport(): Transport
    {
        return self::transportName() === 'curl' ? new CurlTransport() : new StreamTransport();
    }

    /** A client of the live gateway (or of $url) on the selected transport. */
    public static function client(?string $url = null, float $timeout = 10.0): Client
    {
        return new Client($url ?? self::url(), null, self::transport(), $timeout);
    }

    /** A resource or user name unique to this run and transport. */
    public static function name(string $what): string
    {
        self::$prefix ??= 'php-' . bin2hex(random_bytes(4));
        return self::$prefix . '-' . self::transportName() . '-' . $what;
    }

    /** Remembers that $user ends up in the flagged registry (flags or a ban). */
    public static function willClear(string $user): string
    {
        self::$toClear[$user] = true;
        return $user;
    }

    /**
     * Clears every user remembered by willClear() from the flagged
     * registry (flags and any ban), so they do not stay there for the
     * retention period. Needs an ops key or an open-mode gateway.
     */
    public static function clearFlagged(): void
    {
        $users = array_keys(self::$toClear);
        self::$toClear = [];
        if ($users === []) {
            return;
        }
        $c = self::client();
        foreach ($users as $user) {
            try {
                $c->request('DELETE', '/abuse/flagged/' . rawurlencode((string) $user));
            } catch (NotFoundException) {
                // nothing there: the test never got as far as flagging
            } catch (LeaseGateException $e) {
                Assert::fail(sprintf('cleanup: could not clear flagged user %s: %s', $user, $e->getMessage()));
            }
        }
    }

    private static function missing(string $name, string $more = ''): never
    {
        $why = sprintf('%s is not set: run the PHP tests through `go test ./php/`, which starts the gateways%s', $name, $more === '' ? '' : '; and ' . $more);
        if (getenv('CI') === 'true') {
            Assert::fail($why);
        }
        Assert::markTestSkipped($why);
    }

    private static function env(string $name): ?string
    {
        $v = getenv($name);
        return is_string($v) && $v !== '' ? $v : null;
    }
}
