<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\ValidationException;

/** backtest: what a candidate policy would have done; a bad field is a ValidationException */
final class BacktestTest extends TestCase
{
    public function testBacktest(): void
    {
        $c = Gateway::client();
        $lock = 'php.backtest-' . bin2hex(random_bytes(4));
        $user = Gateway::name('tried-twice');
        $c->addUserLock($lock, $user, 60);
        $c->addUserLock($lock, $user, 60);
        $c->clearUserLock($lock, $user);

        $bt = $c->backtest($lock, ['max_attempts' => 2], null, null, [$user]);
        self::eq([$bt['recorded']['attempts'], $bt['recorded']['users']], [2, 1], 'recorded: two attempts of one user');
        self::eq([$bt['in_force']['flagged_users'], $bt['candidate']['flagged_users']], [0, 1], 'in force flags nobody, the candidate one');
        self::eq($bt['newly_flagged']['count'], 1, 'one user newly flagged');
        self::eq($bt['newly_flagged']['users'][0]['user_id'] ?? null, $user, 'the user that tried twice');
        self::eq(count($bt['newly_flagged']['users'][0]['attempts_at'] ?? []), 2, 'with both attempt times');

        $e = self::throws(ValidationException::class, fn () => $c->backtest($lock, ['max_attempts' => 0]), 'max_attempts 0 is refused');
        self::eq($e?->status, 422, 'a 422');
        self::assertStringContainsString('policy.max_attempts', $e?->getMessage() ?? '', 'naming the field');
    }
}
