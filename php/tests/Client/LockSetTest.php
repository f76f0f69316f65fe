<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\ValidationException;

/** acquireSet / releaseSet: all or none */
final class LockSetTest extends TestCase
{
    public function testASetIsTakenWholeOrNotAtAll(): void
    {
        $c = Gateway::client();
        $a = Gateway::name('set-a');
        $b = Gateway::name('set-b');

        $e = self::throws(ValidationException::class, fn () => $c->acquireSet([$a, $a], 'o', 30), 'a resource named twice');
        self::eq($e?->hasFieldError('resources[1]'), true, 'the duplicate is named');

        $leases = $c->acquireSet([$a, $b], 'first', 30);
        self::assertTrue($leases !== null && count($leases) === 2, 'a free set is granted whole');
        self::eq([$leases[0]->resource, $leases[1]->resource], [$a, $b], 'one lease per resource, in order');
        self::assertTrue($leases[0]->token > 0 && $leases[1]->token > 0, 'each lease has its token');

        $c2 = Gateway::name('set-c');
        self::eq($c->acquireSet([$c2, $b], 'second', 30), null, 'a set with a held member is refused');
        self::throws(\LeaseGate\NotFoundException::class, fn () => $c->status($c2), 'the free member was not taken');

        self::eq($c->releaseSet([$a, $b, $c2], 'first'), ['released' => [$a, $b], 'not_held' => [$c2]], 'release names what it released');
        self::assertTrue($c->acquireSet([$c2, $b], 'second', 30) !== null, 'the set is free again');
        $c->releaseSet([$c2, $b], 'second');
    }
}
