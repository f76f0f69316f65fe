<?php

declare(strict_types=1);

namespace LeaseGate\Testing;

use LeaseGate\Client;
use PHPUnit\Framework\TestCase;

/**
 * A PHPUnit test case with a leasegate gateway of its own: one
 * TestGateway per test class, started before its first test and stopped
 * after its last (override gatewayArgs() for more `leasegate serve`
 * flags).
 *
 * A gateway that cannot start fails every test of the class, saying why:
 * LEASEGATE_BIN names no executable, or the gateway exits. When nothing
 * names a binary (LEASEGATE_BIN unset, no leasegate on PATH) the tests
 * are skipped, and one line on STDERR says so (PHPUnit's summary shows
 * only a count of skipped tests); under CI=true they fail instead.
 *
 *     final class CheckinTest extends GatewayTestCase
 *     {
 *         public function testTheFifthAttemptIsFlagged(): void
 *         {
 *             $client = $this->client();
 *             ...
 *             $this->fastForward(60);   // the window has passed
 *         }
 *     }
 */
abstract class GatewayTestCase extends TestCase
{
    /** @var array<class-string, TestGateway> */
    private static array $gateways = [];

    /** @var array<class-string, string> why the class is skipped */
    private static array $missing = [];

    /** @var array<class-string, string> why the class's gateway did not start */
    private static array $failed = [];

    /** Whether the STDERR line about skipping was written (once per process). */
    private static bool $told = false;

    /** @return list<string> more `leasegate serve` flags for this class's gateway */
    protected static function gatewayArgs(): array
    {
        return [];
    }

    public static function setUpBeforeClass(): void
    {
        parent::setUpBeforeClass();
        try {
            self::$gateways[static::class] = TestGateway::start(static::gatewayArgs());
        } catch (GatewayNotFound $e) {
            self::$missing[static::class] = $e->getMessage();
            if (!self::$told && getenv('CI') !== 'true' && defined('STDERR')) {
                self::$told = true;
                fwrite(STDERR, sprintf("leasegate: GatewayTestCase tests are SKIPPED: %s\n", $e->getMessage()));
            }
        } catch (\RuntimeException $e) {
            self::$failed[static::class] = $e->getMessage();
        }
    }

    public static function tearDownAfterClass(): void
    {
        (self::$gateways[static::class] ?? null)?->stop();
        unset(self::$gateways[static::class], self::$missing[static::class], self::$failed[static::class]);
        parent::tearDownAfterClass();
    }

    protected function setUp(): void
    {
        parent::setUp();
        if (isset(self::$failed[static::class])) {
            self::fail(self::$failed[static::class]);
        }
        if (isset(self::$missing[static::class])) {
            if (getenv('CI') === 'true') {
                self::fail(self::$missing[static::class] . ' (CI=true: a missing gateway is a failure)');
            }
            self::markTestSkipped(self::$missing[static::class]);
        }
    }

    /** This class's gateway. */
    protected static function gateway(): TestGateway
    {
        return self::$gateways[static::class];
    }

    /** A client of this class's gateway. */
    protected function client(?string $apiKey = null): Client
    {
        return self::gateway()->client($apiKey);
    }

    /** Moves the gateway's store clock $seconds ahead (TestGateway::fastForward). */
    protected function fastForward(float $seconds, ?string $opsKey = null): \DateTimeImmutable
    {
        return self::gateway()->fastForward($seconds, $opsKey);
    }
}
