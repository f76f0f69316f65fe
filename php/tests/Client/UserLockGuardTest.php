<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Client;
use LeaseGate\Tests\Support\FakeTransport;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\UserLockGuard;
use LeaseGate\ValidationException;

/** UserLockGuard's answers to what the gateway can say (fake transport, no gateway). */
final class UserLockGuardTest extends TestCase
{
    public function testAnswersByWhatTheGatewaySays(): void
    {
        $fake = new FakeTransport();
        $client = new Client('http://gw.example', null, $fake);
        $closed = new UserLockGuard($client, false);
        $open = new UserLockGuard($client, true);

        $limits = ['RateLimit-Policy' => '"checkin";q=5;w=10', 'RateLimit' => '"checkin";r=4;t=10'];
        $fake->answer(200, '{"acquired":true,"attempts":1,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}', $limits);
        $v = $closed->check('checkin', 'u1', 10);
        self::eq([$v->pass, $v->status, $v->headers], [true, null, $limits], 'the first attempt passes with the RateLimit fields');
        self::eq(json_decode((string) $fake->last()['body'], true), ['ttl_seconds' => 10], 'the window is sent');

        $fake->answer(200, '{"acquired":false,"attempts":2,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}',
            ['RateLimit-Policy' => '"checkin";q=5;w=10', 'RateLimit' => '"checkin";r=3;t=7']);
        $v = $closed->check('checkin', 'u1', 10);
        self::eq([$v->pass, $v->status, $v->headers['Retry-After'] ?? null, $v->headers['RateLimit'] ?? null], [false, 429, '7', '"checkin";r=3;t=7'], 'a repeat: 429, Retry-After from the reset');
        self::eq(json_decode($v->body(), true)['status'] ?? null, 429, 'a problem document');

        foreach ([[503, 'unavailable', ['Retry-After' => '2'], '2'], [500, 'internal', [], '1'], [429, 'rate-limited', ['Retry-After' => '3'], '3']] as [$status, $slug, $headers, $retry]) {
            $fake->problem($status, $slug, [], $headers);
            $v = $closed->check('checkin', 'u1');
            self::eq([$v->pass, $v->status, $v->headers['Retry-After'] ?? null], [false, 503, $retry], "$slug, fail closed");
            $fake->problem($status, $slug, [], $headers);
            $v = $open->check('checkin', 'u1');
            self::eq([$v->pass, $v->status, $v->headers], [true, null, []], "$slug, fail open");
            self::eq($v->error?->getCode(), $status, "$slug: the error is kept");
        }

        $fake->problem(422, 'validation');
        self::throws(ValidationException::class, fn () => $open->check('bad name', 'u1'), 'a configuration error is thrown, even failing open');
    }
}
