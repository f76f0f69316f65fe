<?php

declare(strict_types=1);

namespace LeaseGate\Testing;

use LeaseGate\Client;
use PHPUnit\Framework\TestCase;

/**
 * A PHPUnit test case with a leasegate gateway of its own: one
 * TestGateway per test class, started before its first test and stopped
 * after its last (override gatewayArgs() for more `leasegate serve`
 * flags). Without a leasegate binary ($LEASEGATE_BIN or PATH) the class
 * is skipped, with a message that says so.
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
        }
    }

    public static function tearDownAfterClass(): void
    {
        (self::$gateways[static::class] ?? null)?->stop();
        unset(self::$gateways[static::class], self::$missing[static::class]);
        parent::tearDownAfterClass();
    }

    protected function setUp(): void
    {
        parent::setUp();
        if (isset(self::$missing[static::class])) {
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
