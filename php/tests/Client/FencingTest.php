<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\ForbiddenException;
use LeaseGate\NotFoundException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** fencing tokens increase across holders, releases and expiry */
final class FencingTest extends TestCase
{
    public function testTokensIncreaseAcrossHoldersReleasesAndExpiry(): void
    {
        $c = Gateway::client();
        $res = Gateway::name('fence');

        $t1 = $c->acquire($res, 'a', 30)->lease?->token;
        $c->release($res, 'a');
        $t2 = $c->acquire($res, 'b', 1)->lease?->token;
        self::assertTrue(is_int($t1) && is_int($t2) && $t2 > $t1, 'token after release grows: ' . self::show([$t1, $t2]));

        // b's 1 s lease expires; c takes over with a higher token.
        $expired = self::eventually(function () use ($c, $res): bool {
            try {
                $c->status($res);
                return false;
            } catch (NotFoundException) {
                return true;
            }
        }, 5.0);
        self::assertTrue($expired, 'a 1 s lease expires within 5 s');
        $t3 = $c->acquire($res, 'c', 30)->lease?->token;
        self::assertTrue(is_int($t3) && $t3 > $t2, 'token after expiry grows: ' . self::show([$t2, $t3]));

        // The former holder is told "not yours", not "gone".
        self::throws(ForbiddenException::class, fn () => $c->release($res, 'b', $t2), 'former holder releasing after expiry gets 403');
        self::throws(ForbiddenException::class, fn () => $c->renew($res, 'b', 30), 'former holder renewing after expiry gets 403');
        self::eq($c->status($res)->token, $t3, 'the new holder keeps its lease');

        // Same owner coming back after its own release still gets a new token.
        $c->release($res, 'c', $t3);
        $t4 = $c->acquire($res, 'c', 30)->lease?->token;
        self::assertTrue(is_int($t4) && $t4 > $t3, 'same owner, new lease, higher token: ' . self::show([$t3, $t4]));
        $c->release($res, 'c');
    }
}
