<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Support;

use LeaseGate\Client;
use LeaseGate\UserLockGuard;

/**
 * The abuse counter on a route, for each framework's integration
 * (Laravel middleware, Symfony subscriber): a subclass sends one request
 * through its integration with send().
 */
abstract class UserLockRouteCases extends TestCase
{
    /**
     * Sends one request for $user through the framework integration
     * guarding the route with the user lock $lockName (window $ttl s).
     *
     * @return array{status: int, headers: array<string, ?string>, body: string, handled: bool}
     *         headers by lower-case name; handled: the app's handler ran
     */
    abstract protected function send(UserLockGuard $guard, string $lockName, int $ttl, ?string $user): array;

    private static function lockName(): string
    {
        return 'php.route-' . bin2hex(random_bytes(4));
    }

    public function testTheFirstAttemptPassesAndARepeatGets429(): void
    {
        $guard = new UserLockGuard(Gateway::client());
        $name = self::lockName();
        $user = Gateway::name('route-user');

        $first = $this->send($guard, $name, 10, $user);
        self::eq([$first['status'], $first['handled']], [200, true], 'the first attempt reaches the handler');
        self::eq($first['headers']['ratelimit-policy'] ?? null, "\"$name\";q=5;w=10", 'RateLimit-Policy on the passing response');
        self::assertMatchesRegularExpression('/^"' . preg_quote($name, '/') . '";r=4;t=(9|10)$/', (string) ($first['headers']['ratelimit'] ?? ''), 'RateLimit on the passing response');

        $second = $this->send($guard, $name, 10, $user);
        self::eq([$second['status'], $second['handled']], [429, false], 'a repeat inside the window is refused before the handler');
        $retry = (int) ($second['headers']['retry-after'] ?? 0);
        self::assertTrue($retry >= 1 && $retry <= 10, 'Retry-After until the window ends: ' . self::show($second['headers']['retry-after'] ?? null));
        self::assertMatchesRegularExpression('/^"' . preg_quote($name, '/') . '";r=3;t=\d+$/', (string) ($second['headers']['ratelimit'] ?? ''), 'RateLimit on the 429');
        self::eq($second['headers']['content-type'] ?? null, 'application/problem+json', 'a problem document');
        self::eq(json_decode($second['body'], true)['status'] ?? null, 429, 'its status');

        self::eq($this->send($guard, $name, 10, Gateway::name('route-other'))['status'], 200, 'another user passes');
        Gateway::client()->clearUserLock($name, $user);
        self::eq($this->send($guard, $name, 10, $user)['status'], 200, 'after the window is cleared the user passes again');
    }

    public function testABannedUserGets429WithRetryAfterAndRateLimit(): void
    {
        $user = Gateway::willClear(Gateway::name('route-banned'));
        Gateway::client()->request('POST', '/abuse/bans/' . rawurlencode($user), ['seconds' => 60, 'reason' => 'php route guard test']);
        $name = self::lockName();
        $r = $this->send(new UserLockGuard(Gateway::client()), $name, 10, $user);
        self::eq([$r['status'], $r['handled']], [429, false], 'a banned user is refused before the handler');
        $retry = (int) ($r['headers']['retry-after'] ?? 0);
        self::assertTrue($retry >= 50 && $retry <= 60, 'Retry-After is the ban\'s remaining time: ' . self::show($r['headers']['retry-after'] ?? null));
        self::eq($r['headers']['ratelimit'] ?? null, "\"$name\";r=0;t=$retry", 'RateLimit: none left until the ban ends');
        self::assertStringEndsWith('/abnormal-usage-detected', (string) (json_decode($r['body'], true)['type'] ?? ''), 'the gateway\'s problem type');
    }

    public function testWhenTheGatewayCannotAnswerItFailsClosedOrOpenAsConfigured(): void
    {
        $user = Gateway::name('route-outage');
        foreach ([
            'Redis down' => Gateway::client(Gateway::downUrl()),
            'no gateway' => new Client(Gateway::deadUrl(), null, Gateway::transport(), 2.0),
        ] as $what => $client) {
            $closed = $this->send(new UserLockGuard($client, false), self::lockName(), 10, $user);
            self::eq([$closed['status'], $closed['handled']], [503, false], "$what, fail closed: 503 before the handler");
            self::assertGreaterThanOrEqual(1, (int) ($closed['headers']['retry-after'] ?? 0), "$what, fail closed: Retry-After");
            $open = $this->send(new UserLockGuard($client, true), self::lockName(), 10, $user);
            self::eq([$open['status'], $open['handled']], [200, true], "$what, fail open: the handler runs");
        }
    }

    public function testWithoutAUserTheClientIpIsCounted(): void
    {
        $name = self::lockName();
        self::eq($this->send(new UserLockGuard(Gateway::client()), $name, 10, null)['status'], 200, 'an anonymous request passes');
        Gateway::client()->clearUserLock($name, 'ip:127.0.0.1'); // 404 (an exception) if it was counted under another id
        $this->addToAssertionCount(1);
    }
}
