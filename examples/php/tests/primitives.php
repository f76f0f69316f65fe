<?php

declare(strict_types=1);

// Groups of tests/run.php for counting semaphores and claims.

use LeaseGate\ClaimInProgressException;
use LeaseGate\ForbiddenException;
use LeaseGate\LimitMismatchException;
use LeaseGate\NotFoundException;

/** Runs $fn and returns what it threw (null when it threw nothing). */
function thrown(callable $fn): ?\Throwable
{
    try {
        $fn();
    } catch (\Throwable $t) {
        return $t;
    }
    return null;
}

function group_semaphores(Ctx $ctx): void
{
    $c = $ctx->client();
    $name = $ctx->name('provider');
    $a = $c->acquirePermit($name, 'w1', 2, 30);
    $b = $c->acquirePermit($name, 'w2', 2, 30);
    if (!check($a->acquired && $b->acquired && $a->permit !== null && $b->permit !== null, 'two permits of limit 2')) {
        return;
    }
    check($b->permit->token > $a->permit->token, 'tokens increase: ' . show([$a->permit->token, $b->permit->token]));
    eq([$b->holders, $b->limit], [2, 2], 'holders and limit after the second permit');

    $full = $c->acquirePermit($name, 'w3', 2, 30);
    eq([$full->acquired, $full->permit, $full->holders, $full->limit], [false, null, 2, 2], 'a full semaphore is an answer, not an exception');
    check($full->retryAfterMs > 0 && $full->retryAfterMs <= 30_000, "retry_after_ms {$full->retryAfterMs} in 1..30000");

    $again = $c->acquirePermit($name, 'w1', 2, 60);
    check($again->acquired && $again->permit?->token === $a->permit->token && $again->permit->expiresAt > $a->permit->expiresAt,
        'the same owner keeps its permit and its expiry moves');

    $e = thrown(fn () => $c->acquirePermit($name, 'w3', 3, 30));
    check($e instanceof LimitMismatchException && $e->status === 409, 'another limit is LimitMismatchException 409: ' . show($e));
    check($e instanceof LimitMismatchException && str_contains($e->detail, '2'), 'its detail names the limit in force: ' . show($e?->getMessage()));

    $st = $c->semaphoreStatus($name);
    eq([$st['limit'], count($st['holders'])], [2, 2], 'status: limit and holders');

    $p = $c->renewPermit($name, 'w2', 90);
    eq($p->token, $b->permit->token, 'renew keeps the token');

    $e = thrown(fn () => $c->releasePermit($name, 'w9'));
    check($e instanceof ForbiddenException, 'release by another owner is ForbiddenException: ' . show($e));
    $c->releasePermit($name, 'w1', $a->permit->token);
    $c->releasePermit($name, 'w2');
    $e = thrown(fn () => $c->releasePermit($name, 'w2'));
    check($e instanceof NotFoundException, 'release on an empty semaphore is NotFoundException: ' . show($e));
}

function group_claims(Ctx $ctx): void
{
    $c = $ctx->client();
    $key = $ctx->name('user-42:2026-12-01');
    $runs = 0;
    $checkIn = function () use (&$runs): array {
        $runs++;
        return ['coins' => 10, 'note' => 'café', 'streak' => 3];
    };
    $first = $c->once('daily-checkin', $key, $checkIn);
    $second = $c->once('daily-checkin', $key, $checkIn);
    eq($runs, 1, 'once runs the work once');
    eq($first, ['coins' => 10, 'note' => 'café', 'streak' => 3], 'the first call returns the result');
    eq($second, $first, 'a later call returns the stored result');
    $got = $c->getClaim('daily-checkin', $key);
    eq([$got->state, $got->result], ['done', $first], 'getClaim shows the done state');

    // The work fails: the claim is abandoned and the next call runs it.
    $failKey = $ctx->name('fails');
    $e = thrown(fn () => $c->once('reward', $failKey, function (): never {
        throw new \RuntimeException('provider down');
    }));
    check($e instanceof \RuntimeException && $e->getMessage() === 'provider down', 'the work\'s exception is rethrown: ' . show($e));
    eq($c->once('reward', $failKey, fn () => 'paid'), 'paid', 'after a failure the next call runs the work');

    // A worker that died mid-work: its claim blocks others until its lease expires.
    $deadKey = $ctx->name('dead-worker');
    $dead = $c->claim('reward', $deadKey, 'dead-worker', 1);
    check($dead->created && $dead->claim !== null, 'a pending claim is created');
    $e = thrown(fn () => $c->claim('reward', $deadKey, 'other', 30));
    check($e instanceof ClaimInProgressException && $e->status === 409 && ($e->retryAfter ?? 0) >= 1,
        'another owner gets ClaimInProgressException with Retry-After: ' . show($e));
    $start = microtime(true);
    $r = $c->once('reward', $deadKey, fn () => 'ran after expiry', 30, null, 10.0);
    $elapsed = microtime(true) - $start;
    eq($r, 'ran after expiry', 'once runs the work once the dead worker\'s lease expired');
    check($elapsed < 5.0, sprintf('it waited about the lease (1 s), took %.2f s', $elapsed));
    if ($dead->claim !== null) {
        $e = thrown(fn () => $c->completeClaim($dead->claim, 'late'));
        check($e instanceof ForbiddenException, 'the dead worker\'s late complete is ForbiddenException: ' . show($e));
    }

    // Long work extends the lease through the callable once() passes in.
    $slowKey = $ctx->name('slow');
    $r = $c->once('reward', $slowKey, function (callable $extend) use ($c, $slowKey): string {
        for ($i = 0; $i < 3; $i++) {
            usleep(600_000); // the work being slow
            $extend();
        }
        $e = thrown(fn () => $c->claim('reward', $slowKey, 'other', 30));
        check($e instanceof ClaimInProgressException, 'the extended claim is still in progress: ' . show($e));
        return 'slow but once';
    }, 1);
    eq($r, 'slow but once', 'long work with extensions completes');
}
