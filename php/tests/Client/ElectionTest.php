<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Leader;
use LeaseGate\NotFoundException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** campaign, proclaim, resign, leader, and onlyOnLeader for a cron body */
final class ElectionTest extends TestCase
{
    public function testCampaignProclaimResign(): void
    {
        $c = Gateway::client();
        $name = Gateway::name('election');
        $a = $c->campaign($name, 'node-a', 30, '10.0.0.1:8080');
        self::assertTrue($a->leader && $a->leadership !== null, 'the first campaign leads: ' . self::show($a));
        self::eq([$a->leadership->candidate, $a->leadership->value], ['node-a', '10.0.0.1:8080'], 'the leadership');
        self::assertTrue($a->leadership->term > 0, 'a positive term');

        $b = $c->campaign($name, 'node-b', 30);
        self::assertTrue(!$b->leader && $b->current?->term === $a->leadership->term, 'a rival is told who leads: ' . self::show($b));
        self::assertTrue($b->retryAfterMs > 0 && $b->retryAfterMs <= 30_000, "retry_after_ms {$b->retryAfterMs} in 1..30000");

        $p = $c->proclaim($a->leadership, '10.0.0.2:8080');
        self::eq([$p->term, $p->value], [$a->leadership->term, '10.0.0.2:8080'], 'proclaim keeps the term');
        self::eq($c->leader($name)->value, '10.0.0.2:8080', 'anyone reads the value');

        $c->resign($a->leadership);
        $e = self::thrown(fn () => $c->leader($name));
        self::assertTrue($e instanceof NotFoundException, 'no leader after the resignation: ' . self::show($e));
        $e = self::thrown(fn () => $c->resign($a->leadership));
        self::assertTrue($e instanceof NotFoundException, 'resigning twice is NotFoundException: ' . self::show($e));

        $next = $c->campaign($name, 'node-b', 30);
        self::assertTrue($next->leader && $next->leadership !== null && $next->leadership->term > $a->leadership->term, 'the next term is larger');
    }

    public function testOnlyOnLeaderRunsTheBodyOnTheLeaderOnly(): void
    {
        $c = Gateway::client();
        $name = Gateway::name('nightly-report');
        $ran = [];
        $got = $c->onlyOnLeader($name, function (Leader $l) use (&$ran, $c, $name): string {
            $ran[] = $l->term;
            // While the body runs, another host's cron is not the leader.
            $other = $c->onlyOnLeader($name, function () use (&$ran): string {
                $ran[] = 'other';
                return 'other';
            }, 60, 'host-2');
            self::assertNull($other, 'another candidate does not run the body');
            return 'report';
        }, 60, 'host-1');
        self::eq($got, 'report', 'the leader runs the body and gets its result');
        self::eq(count($ran), 1, 'the body ran once');
        $e = self::thrown(fn () => $c->leader($name));
        self::assertTrue($e instanceof NotFoundException, 'resigned after the body: ' . self::show($e));

        $e = self::thrown(fn () => $c->onlyOnLeader($name, function (): never {
            throw new \RuntimeException('report failed');
        }, 60, 'host-1'));
        self::assertTrue($e instanceof \RuntimeException, 'the body\'s exception comes through: ' . self::show($e));
        $e = self::thrown(fn () => $c->leader($name));
        self::assertTrue($e instanceof NotFoundException, 'resigned after a failing body too: ' . self::show($e));
    }
}
