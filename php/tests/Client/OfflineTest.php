<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\AbnormalUsageException;
use LeaseGate\Client;
use LeaseGate\ForbiddenException;
use LeaseGate\InternalException;
use LeaseGate\LeaseGateException;
use LeaseGate\Lock;
use LeaseGate\MalformedRequestException;
use LeaseGate\MethodNotAllowedException;
use LeaseGate\NotFoundException;
use LeaseGate\PayloadTooLargeException;
use LeaseGate\ProblemException;
use LeaseGate\RateLimitedException;
use LeaseGate\Tests\Support\FakeTransport;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\TransportException;
use LeaseGate\UnauthorizedException;
use LeaseGate\UnavailableException;
use LeaseGate\UnsupportedMediaTypeException;
use LeaseGate\ValidationException;
use LeaseGate\WebhookSignature;

/** requests, configuration and problem mapping (fake transport, no gateway) */
final class OfflineTest extends TestCase
{
    public function testTimeoutsAndUnixSocketBase(): void
    {
        $fake = new FakeTransport();
        $fake->answer(204);
        (new Client('http://gw.example', null, $fake))->release('r', 'o');
        self::eq([$fake->last()['timeout'], $fake->last()['connectTimeout'], $fake->last()['unixSocket']], [3.0, 1.0, null], 'default request and connect bounds, TCP');
        $fake->answer(200, '{"acquired":false,"resource":"r","retry_after_ms":1}');
        (new Client('http://gw.example', null, $fake, 2.0, null, 0.25))->acquire('r', 'o', 5, 1500);
        self::eq([$fake->last()['timeout'], $fake->last()['connectTimeout']], [3.5, 0.25], 'both bounds from the constructor, the request bound grown by wait_ms');

        $c = new Client('unix:/run/leasegate/gw.sock/', null, $fake);
        self::eq($c->baseUrl(), 'unix:/run/leasegate/gw.sock', 'a unix: base URL without its trailing slash');
        $fake->answer(204);
        $c->release('a b', 'o');
        self::eq([$fake->last()['url'], $fake->last()['unixSocket']], ['http://localhost/locks/a%20b?owner=o', '/run/leasegate/gw.sock'], 'a request on the socket');
        foreach (['unix:', 'unix:relative.sock', 'unix:/', 'unix:/a.sock?x=1'] as $bad) {
            self::throws(\InvalidArgumentException::class, fn () => new Client($bad, null, $fake), "base URL $bad");
        }
        self::throws(\InvalidArgumentException::class, fn () => new Client('http://x', null, $fake, 3.0, null, 0.0), 'connect timeout 0');
    }

    public function testRequestsConfigurationAndProblems(): void
    {
        // Requests: URL, method, headers, body.
        $fake = new FakeTransport();
        $c = new Client('http://gw.example:8080/', 'k-123', $fake, 7.0);
        self::eq($c->baseUrl(), 'http://gw.example:8080', 'base URL without trailing slash');

        $fake->answer(200, '{"acquired":true,"lock":{"resource":"a b/c","owner":"o","token":42,"acquired_at":"2026-11-30T09:30:00.123Z","expires_at":"2026-11-30T09:30:05.123Z"}}');
        $r = $c->acquire('a b/c', 'o', 5);
        $req = $fake->last();
        self::eq($req['method'], 'POST', 'acquire method');
        self::eq($req['url'], 'http://gw.example:8080/locks/a%20b%2Fc', 'acquire URL (segment percent-encoded)');
        self::eq($req['headers']['Authorization'] ?? null, 'Bearer k-123', 'API key sent as Bearer');
        self::eq($req['headers']['Content-Type'] ?? null, 'application/json', 'JSON content type');
        self::eq(json_decode((string) $req['body'], true), ['owner' => 'o', 'ttl_seconds' => 5], 'acquire body without wait_ms');
        self::eq($req['timeout'], 7.0, 'timeout without wait');
        self::eq($r->acquired, true, 'acquired');
        self::eq($r->lease?->token, 42, 'token');
        self::eq($r->lease?->acquiredAt->format('Y-m-d H:i:s.v e'), '2026-11-30 09:30:00.123 UTC', 'acquired_at parsed as UTC with ms');
        self::eq($r->lease !== null ? self::expiresInMs($r->lease) : null, 5000, 'expires_at - acquired_at');

        $fake->answer(200, '{"acquired":false,"resource":"r","retry_after_ms":1234}');
        $r = $c->acquire('r', 'o', 5, 2500);
        self::eq(json_decode((string) $fake->last()['body'], true), ['owner' => 'o', 'ttl_seconds' => 5, 'wait_ms' => 2500], 'acquire body with wait_ms');
        self::eq($fake->last()['timeout'], 9.5, 'timeout grows by wait_ms');
        self::eq([$r->acquired, $r->lease, $r->retryAfterMs, $r->resource], [false, null, 1234, 'r'], 'contended answer');

        $fake->answer(204);
        $c->release('ü x', 'owner one', 77);
        self::eq($fake->last()['method'], 'DELETE', 'release method');
        self::eq($fake->last()['url'], 'http://gw.example:8080/locks/%C3%BC%20x?owner=owner%20one&token=77', 'release URL with owner and token in the query');
        self::eq($fake->last()['body'], null, 'release sends no body');

        $fake->answer(200, '{"lock":{"resource":"r","owner":"o","token":9,"acquired_at":"2026-11-30T09:30:00.000Z","expires_at":"2026-11-30T09:31:00.000Z"}}');
        $l = $c->renew('r', 'o', 60, 9);
        self::eq($fake->last()['url'], 'http://gw.example:8080/locks/r/renew', 'renew URL');
        self::eq(json_decode((string) $fake->last()['body'], true), ['owner' => 'o', 'ttl_seconds' => 60, 'token' => 9], 'renew body');
        self::eq($l->token, 9, 'renewed token');

        $fake->answer(200, '{"acquired":true,"attempts":1,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}');
        $u = $c->addUserLock('receiveDailyTask', 'user/1 ü');
        self::eq($fake->last()['url'], 'http://gw.example:8080/user-locks/receiveDailyTask/user%2F1%20%C3%BC', 'user lock URL');
        self::eq($fake->last()['body'], null, 'no body without a ttl (gateway default)');
        self::eq([$u->acquired, $u->attempts, $u->flagged], [true, 1, false], 'user lock answer');
        self::eq($u->rateLimit, null, 'no RateLimit fields, no rateLimit');
        $fake->answer(200, '{"acquired":false,"attempts":2,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}',
            ['RateLimit-Policy' => '"n";q=5;w=30', 'RateLimit' => '"n";r=3;t=28']);
        $u = $c->addUserLock('n', 'u', 30);
        self::eq([$u->rateLimit?->policy, $u->rateLimit?->quota, $u->rateLimit?->windowSeconds, $u->rateLimit?->remaining, $u->rateLimit?->resetSeconds],
            ['n', 5, 30, 3, 28], 'RateLimit header fields read');
        self::eq(json_decode((string) $fake->last()['body'], true), ['ttl_seconds' => 30], 'user lock body with ttl');
        $fake->answer(204);
        $c->clearUserLock('n', 'u');
        self::eq([$fake->last()['method'], $fake->last()['url']], ['DELETE', 'http://gw.example:8080/user-locks/n/u'], 'clear user lock request');

        // Webhook signatures (the vector is webhook.Sign's in Go).
        $whBody = '{"id":"e1","type":"ban"}';
        $whSig = 't=1764495000,v1=9018ad939bae5d9860de6f6b360b4cbf4b9b3d05ab5f59ba2699fc2012e5d8a9';
        self::eq(WebhookSignature::verify('s3cr3t', $whSig, $whBody, 300, 1764495060), true, 'webhook signature verifies');
        self::eq(WebhookSignature::verify('other', $whSig, $whBody, 300, 1764495060), false, 'webhook signature: another secret');
        self::eq(WebhookSignature::verify('s3cr3t', $whSig, $whBody . ' ', 300, 1764495060), false, 'webhook signature: another body');
        self::eq(WebhookSignature::verify('s3cr3t', $whSig, $whBody, 300, 1764499000), false, 'webhook signature: too old');
        self::eq(WebhookSignature::verify('s3cr3t', null, $whBody), false, 'webhook signature: missing');

        // Dot segments are encoded so no client or proxy squashes them.
        $fake->problem(404, 'not-found');
        self::throws(NotFoundException::class, fn () => $c->status('..'), 'status of ".."');
        self::eq($fake->last()['url'], 'http://gw.example:8080/locks/%2E%2E', '".." encoded as %2E%2E');

        self::throws(\InvalidArgumentException::class, fn () => $c->status(''), 'empty resource refused before sending');
        self::throws(\InvalidArgumentException::class, fn () => $c->addUserLock('n', ''), 'empty user id refused before sending');
        self::throws(\InvalidArgumentException::class, fn () => $c->acquire('r', "\xff", 5), 'owner that is not UTF-8');
        self::throws(\InvalidArgumentException::class, fn () => new Client('ftp://x'), 'non-HTTP URL');

        // Configuration from the environment.
        $saved = [getenv('LEASEGATE_URL'), getenv('LEASEGATE_API_KEY')];
        putenv('LEASEGATE_URL');
        putenv('LEASEGATE_API_KEY');
        self::eq((new Client(null, null, $fake))->baseUrl(), 'http://127.0.0.1:8080', 'default URL');
        putenv('LEASEGATE_URL=http://env.example:9000');
        putenv('LEASEGATE_API_KEY=from-env');
        $envClient = new Client(null, null, $fake);
        self::eq($envClient->baseUrl(), 'http://env.example:9000', 'URL from LEASEGATE_URL');
        $fake->answer(204);
        $envClient->clearUserLock('n', 'u');
        self::eq($fake->last()['headers']['Authorization'] ?? null, 'Bearer from-env', 'key from LEASEGATE_API_KEY');
        self::eq((new Client('http://ctor.example', null, $fake))->baseUrl(), 'http://ctor.example', 'constructor URL beats the environment');
        putenv('LEASEGATE_API_KEY=');
        $fake->answer(204);
        (new Client(null, null, $fake))->clearUserLock('n', 'u');
        self::eq(isset($fake->last()['headers']['Authorization']), false, 'empty LEASEGATE_API_KEY sends no Authorization');
        putenv($saved[0] === false ? 'LEASEGATE_URL' : 'LEASEGATE_URL=' . $saved[0]);
        putenv($saved[1] === false ? 'LEASEGATE_API_KEY' : 'LEASEGATE_API_KEY=' . $saved[1]);

        // Problems: one exception class per slug.
        $bySlug = [
            [400, 'malformed-request', MalformedRequestException::class],
            [401, 'unauthorized', UnauthorizedException::class],
            [403, 'forbidden', ForbiddenException::class],
            [404, 'not-found', NotFoundException::class],
            [405, 'malformed-request', MethodNotAllowedException::class],
            [413, 'payload-too-large', PayloadTooLargeException::class],
            [415, 'unsupported-media-type', UnsupportedMediaTypeException::class],
            [422, 'validation', ValidationException::class],
            [429, 'rate-limited', RateLimitedException::class],
            [429, 'abnormal-usage-detected', AbnormalUsageException::class],
            [500, 'internal', InternalException::class],
            [503, 'unavailable', UnavailableException::class],
            [418, 'teapot', ProblemException::class],
        ];
        foreach ($bySlug as [$status, $slug, $class]) {
            $fake->problem($status, $slug);
            $e = self::throws($class, fn () => $c->status('r'), "problem $slug");
            if ($e instanceof ProblemException) {
                self::eq([$e->status, $e->getCode(), $e->slug(), $e->detail], [$status, $status, $slug, "detail of $slug"], "problem $slug fields");
                self::assertTrue($e instanceof LeaseGateException, "$slug is a LeaseGateException");
            }
        }

        $fake->problem(429, 'abnormal-usage-detected', [], ['Retry-After' => '42']);
        $e = self::throws(AbnormalUsageException::class, fn () => $c->addUserLock('n', 'u'), 'banned user');
        self::eq($e?->retryAfter, 42, 'retryAfter from the Retry-After header');

        $fake->problem(422, 'validation', ['errors' => [
            ['field' => 'ttl_seconds', 'message' => 'must be an integer in 1..86400'],
            ['field' => 'owner', 'message' => 'is required'],
        ]]);
        $e = self::throws(ValidationException::class, fn () => $c->acquire('r', 'o', 0), 'validation problem');
        if ($e instanceof ValidationException) {
            self::eq(count($e->fieldErrors), 2, 'field errors');
            self::eq($e->errorsFor('ttl_seconds'), ['must be an integer in 1..86400'], 'ttl_seconds message');
            self::eq([$e->hasFieldError('owner'), $e->hasFieldError('resource')], [true, false], 'hasFieldError');
        }

        // Answers that are not problem+json keep the class their status implies.
        $fake->answer(502, '<html>bad gateway</html>', ['Content-Type' => 'text/html', 'Retry-After' => '3']);
        $e = self::throws(UnavailableException::class, fn () => $c->status('r'), 'proxy 502 page');
        self::eq([$e?->status, $e?->retryAfter, $e?->detail], [502, 3, '<html>bad gateway</html>'], '502 page fields');
        $fake->answer(404, 'not found');
        self::throws(NotFoundException::class, fn () => $c->status('r'), 'plain-text 404');
        $fake->answer(200, 'not json');
        self::throws(TransportException::class, fn () => $c->status('r'), 'success answer that is not JSON');
        $fake->answer(200, '{"lock":{"resource":"r"}}');
        self::throws(TransportException::class, fn () => $c->status('r'), 'success answer of the wrong shape');
        $fake->answer(200, '{"acquired":"yes"}');
        self::throws(TransportException::class, fn () => $c->acquire('r', 'o', 5), 'acquire answer of the wrong shape');

        // The drop-in class on top of the client.
        $lock = new Lock(1001, 'receiveDailyTask', $c);
        self::eq([$lock->attempts(), $lock->flagged(), $lock->banned()], [0, false, false], 'Lock before any attempt');
        $fake->answer(200, '{"acquired":true,"attempts":1,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}');
        self::eq($lock->addUserLock(), true, 'Lock first attempt');
        self::eq(json_decode((string) $fake->last()['body'], true), ['ttl_seconds' => 10], 'Lock default window is 10 s');
        self::eq($fake->last()['url'], 'http://gw.example:8080/user-locks/receiveDailyTask/1001', 'Lock URL uses the mid');
        $fake->answer(200, '{"acquired":false,"attempts":5,"flagged":true,"expires_at":"2026-11-30T09:30:10.000Z"}');
        self::eq($lock->addUserLock(30), false, 'Lock repeat');
        self::eq(json_decode((string) $fake->last()['body'], true), ['ttl_seconds' => 30], 'Lock window from $time');
        self::eq([$lock->attempts(), $lock->flagged()], [5, true], 'Lock attempts and flagged');
        $fake->problem(429, 'abnormal-usage-detected', [], ['Retry-After' => '120']);
        self::eq($lock->addUserLock(), false, 'Lock while banned');
        self::eq([$lock->banned(), $lock->retryAfter(), $lock->attempts()], [true, 120, 0], 'Lock ban state');
        $fake->problem(503, 'unavailable', [], ['Retry-After' => '1']);
        self::throws(UnavailableException::class, fn () => $lock->addUserLock(), 'Lock when Redis is down throws, never true');
        $fake->answer(204);
        self::eq($lock->clearUserLock(), true, 'Lock clear');
        $fake->problem(404, 'not-found');
        self::eq($lock->clearUserLock(), false, 'Lock clear with nothing there');
        $fake->problem(403, 'forbidden');
        self::throws(ForbiddenException::class, fn () => $lock->clearUserLock(), 'Lock clear forbidden throws');

        Lock::useClient($c);
        $fake->answer(200, '{"acquired":true,"attempts":1,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}');
        self::eq((new Lock('m-7', 'x'))->addUserLock(), true, 'Lock with the client from useClient()');
        self::eq($fake->last()['url'], 'http://gw.example:8080/user-locks/x/m-7', 'Lock::useClient URL');
        Lock::useClient(null);
    }

    private static function expiresInMs(\LeaseGate\Lease $l): int
    {
        return (int) round(((float) $l->expiresAt->format('U.v') - (float) $l->acquiredAt->format('U.v')) * 1000);
    }
}
