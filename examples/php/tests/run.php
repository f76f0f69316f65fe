<?php

declare(strict_types=1);

// Test of the PHP client against a real gateway (LEASEGATE_URL), with the
// stream transport and, when ext-curl is loaded, the curl transport.
//
//   php tests/run.php                         every group, every transport
//   php tests/run.php --group=resource-locks  one group
//   php tests/run.php --transport=stream      one transport
//   php tests/run.php --list | --transports   what there is
//   php tests/run.php --help                  this text
//
// Any other argument is refused (exit 2), so a typo never runs every
// group while looking like one. Users the checks flag or ban are cleared
// from the gateway's flagged registry (DELETE /abuse/flagged/{user}) when
// the run ends, pass or fail, so they do not stay there for the retention
// period (--abuse-flag-retention, 30 days by default); that needs an ops
// key, or a gateway in open mode.
//
// Env: LEASEGATE_URL (a gateway on the embedded or a real Redis, default
// http://127.0.0.1:8080), LEASEGATE_DOWN_URL (a gateway whose Redis is
// down; the "unavailable" groups are skipped without it),
// LEASEGATE_DEAD_URL (an address nothing listens on). Exit status 1 when
// any check failed. examples/php/php_test.go runs this from `go test`.

require __DIR__ . '/../autoload.php';
require __DIR__ . '/harness.php';
require __DIR__ . '/FakeTransport.php';
require __DIR__ . '/primitives.php';

use LeaseGate\AbnormalUsageException;
use LeaseGate\AcquireResult;
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
use LeaseGate\Transport\CurlTransport;
use LeaseGate\Transport\StreamTransport;
use LeaseGate\Transport\Transport;
use LeaseGate\TransportException;
use LeaseGate\UnauthorizedException;
use LeaseGate\UnavailableException;
use LeaseGate\UnsupportedMediaTypeException;
use LeaseGate\ValidationException;
use LeaseGate\WebhookSignature;

final class Ctx
{
    public function __construct(
        public readonly string $transportName,
        public readonly string $url,
        public readonly ?string $downUrl,
        public readonly string $deadUrl,
        /** unique per run, so reruns against one gateway never share keys */
        public readonly string $prefix,
    ) {
    }

    /** @var array<string, true> users this run flagged or banned: cleared at the end */
    public static array $toClear = [];

    /** Remember that $user ends up in the flagged registry (flags or a ban). */
    public function willClear(string $user): string
    {
        self::$toClear[$user] = true;
        return $user;
    }

    public function transport(): Transport
    {
        return $this->transportName === 'curl' ? new CurlTransport() : new StreamTransport();
    }

    public function client(?string $url = null): Client
    {
        return new Client($url ?? $this->url, null, $this->transport());
    }

    /** A resource or user name unique to this run. */
    public function name(string $what): string
    {
        return $this->prefix . '-' . $this->transportName . '-' . $what;
    }
}

function expires_in_ms(\LeaseGate\Lease $l): int
{
    return (int) round(((float) $l->expiresAt->format('U.v') - (float) $l->acquiredAt->format('U.v')) * 1000);
}

// ---------------------------------------------------------------- groups

/** @return array<string, array{string, callable(Ctx): void}> */
function groups(): array
{
    return [
        'offline' => ['requests, configuration and problem mapping (fake transport, no gateway)', 'group_offline'],
        'resource-locks' => ['acquire, contend, status, release (403 vs 404), renew', 'group_resource_locks'],
        'fencing' => ['fencing tokens increase across holders, releases and expiry', 'group_fencing'],
        'validation' => ['422 validation problems become ValidationException with field errors', 'group_validation'],
        'encoding' => ['resource names with spaces, unicode, slashes and more round-trip', 'group_encoding'],
        'unavailable' => ['Redis down -> UnavailableException, no gateway -> TransportException', 'group_unavailable'],
        'waiting' => ['acquire with wait_ms: woken by release and by expiry, times out', 'group_waiting'],
        'user-locks' => ['Client::addUserLock/clearUserLock and the drop-in Lock class', 'group_user_locks'],
        'user-locks-unavailable' => ['user locks with Redis down: exception, never "acquired"', 'group_user_locks_unavailable'],
        'bans' => ['a banned user: AbnormalUsageException with retryAfter, Lock returns false', 'group_bans'],
        'semaphores' => ['permits up to the limit, full answers, limit-mismatch, renew, release (403 vs 404)', 'group_semaphores'],
        'claims' => ['once() runs the work once, stores and replays its result, abandons on failure, waits out a dead worker', 'group_claims'],
    ];
}

function group_offline(Ctx $ctx): void
{
    // Requests: URL, method, headers, body.
    $fake = new FakeTransport();
    $c = new Client('http://gw.example:8080/', 'k-123', $fake, 7.0);
    eq($c->baseUrl(), 'http://gw.example:8080', 'base URL without trailing slash');

    $fake->answer(200, '{"acquired":true,"lock":{"resource":"a b/c","owner":"o","token":42,"acquired_at":"2026-11-30T09:30:00.123Z","expires_at":"2026-11-30T09:30:05.123Z"}}');
    $r = $c->acquire('a b/c', 'o', 5);
    $req = $fake->last();
    eq($req['method'], 'POST', 'acquire method');
    eq($req['url'], 'http://gw.example:8080/locks/a%20b%2Fc', 'acquire URL (segment percent-encoded)');
    eq($req['headers']['Authorization'] ?? null, 'Bearer k-123', 'API key sent as Bearer');
    eq($req['headers']['Content-Type'] ?? null, 'application/json', 'JSON content type');
    eq(json_decode((string) $req['body'], true), ['owner' => 'o', 'ttl_seconds' => 5], 'acquire body without wait_ms');
    eq($req['timeout'], 7.0, 'timeout without wait');
    eq($r->acquired, true, 'acquired');
    eq($r->lease?->token, 42, 'token');
    eq($r->lease?->acquiredAt->format('Y-m-d H:i:s.v e'), '2026-11-30 09:30:00.123 UTC', 'acquired_at parsed as UTC with ms');
    eq($r->lease !== null ? expires_in_ms($r->lease) : null, 5000, 'expires_at - acquired_at');

    $fake->answer(200, '{"acquired":false,"resource":"r","retry_after_ms":1234}');
    $r = $c->acquire('r', 'o', 5, 2500);
    eq(json_decode((string) $fake->last()['body'], true), ['owner' => 'o', 'ttl_seconds' => 5, 'wait_ms' => 2500], 'acquire body with wait_ms');
    eq($fake->last()['timeout'], 9.5, 'timeout grows by wait_ms');
    eq([$r->acquired, $r->lease, $r->retryAfterMs, $r->resource], [false, null, 1234, 'r'], 'contended answer');

    $fake->answer(204);
    $c->release('ü x', 'owner one', 77);
    eq($fake->last()['method'], 'DELETE', 'release method');
    eq($fake->last()['url'], 'http://gw.example:8080/locks/%C3%BC%20x?owner=owner%20one&token=77', 'release URL with owner and token in the query');
    eq($fake->last()['body'], null, 'release sends no body');

    $fake->answer(200, '{"lock":{"resource":"r","owner":"o","token":9,"acquired_at":"2026-11-30T09:30:00.000Z","expires_at":"2026-11-30T09:31:00.000Z"}}');
    $l = $c->renew('r', 'o', 60, 9);
    eq($fake->last()['url'], 'http://gw.example:8080/locks/r/renew', 'renew URL');
    eq(json_decode((string) $fake->last()['body'], true), ['owner' => 'o', 'ttl_seconds' => 60, 'token' => 9], 'renew body');
    eq($l->token, 9, 'renewed token');

    $fake->answer(200, '{"acquired":true,"attempts":1,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}');
    $u = $c->addUserLock('receiveDailyTask', 'user/1 ü');
    eq($fake->last()['url'], 'http://gw.example:8080/user-locks/receiveDailyTask/user%2F1%20%C3%BC', 'user lock URL');
    eq($fake->last()['body'], null, 'no body without a ttl (gateway default)');
    eq([$u->acquired, $u->attempts, $u->flagged], [true, 1, false], 'user lock answer');
    eq($u->rateLimit, null, 'no RateLimit fields, no rateLimit');
    $fake->answer(200, '{"acquired":false,"attempts":2,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}',
        ['RateLimit-Policy' => '"n";q=5;w=30', 'RateLimit' => '"n";r=3;t=28']);
    $u = $c->addUserLock('n', 'u', 30);
    eq([$u->rateLimit?->policy, $u->rateLimit?->quota, $u->rateLimit?->windowSeconds, $u->rateLimit?->remaining, $u->rateLimit?->resetSeconds],
        ['n', 5, 30, 3, 28], 'RateLimit header fields read');
    eq(json_decode((string) $fake->last()['body'], true), ['ttl_seconds' => 30], 'user lock body with ttl');
    $fake->answer(204);
    $c->clearUserLock('n', 'u');
    eq([$fake->last()['method'], $fake->last()['url']], ['DELETE', 'http://gw.example:8080/user-locks/n/u'], 'clear user lock request');

    // Webhook signatures (the vector is webhook.Sign's in Go).
    $whBody = '{"id":"e1","type":"ban"}';
    $whSig = 't=1764495000,v1=9018ad939bae5d9860de6f6b360b4cbf4b9b3d05ab5f59ba2699fc2012e5d8a9';
    eq(WebhookSignature::verify('s3cr3t', $whSig, $whBody, 300, 1764495060), true, 'webhook signature verifies');
    eq(WebhookSignature::verify('other', $whSig, $whBody, 300, 1764495060), false, 'webhook signature: another secret');
    eq(WebhookSignature::verify('s3cr3t', $whSig, $whBody . ' ', 300, 1764495060), false, 'webhook signature: another body');
    eq(WebhookSignature::verify('s3cr3t', $whSig, $whBody, 300, 1764499000), false, 'webhook signature: too old');
    eq(WebhookSignature::verify('s3cr3t', null, $whBody), false, 'webhook signature: missing');

    // Dot segments are encoded so no client or proxy squashes them.
    $fake->problem(404, 'not-found');
    throws(NotFoundException::class, fn () => $c->status('..'), 'status of ".."');
    eq($fake->last()['url'], 'http://gw.example:8080/locks/%2E%2E', '".." encoded as %2E%2E');

    throws(\InvalidArgumentException::class, fn () => $c->status(''), 'empty resource refused before sending');
    throws(\InvalidArgumentException::class, fn () => $c->addUserLock('n', ''), 'empty user id refused before sending');
    throws(\InvalidArgumentException::class, fn () => $c->acquire('r', "\xff", 5), 'owner that is not UTF-8');
    throws(\InvalidArgumentException::class, fn () => new Client('ftp://x'), 'non-HTTP URL');

    // Configuration from the environment.
    $saved = [getenv('LEASEGATE_URL'), getenv('LEASEGATE_API_KEY')];
    putenv('LEASEGATE_URL');
    putenv('LEASEGATE_API_KEY');
    eq((new Client(null, null, $fake))->baseUrl(), 'http://127.0.0.1:8080', 'default URL');
    putenv('LEASEGATE_URL=http://env.example:9000');
    putenv('LEASEGATE_API_KEY=from-env');
    $envClient = new Client(null, null, $fake);
    eq($envClient->baseUrl(), 'http://env.example:9000', 'URL from LEASEGATE_URL');
    $fake->answer(204);
    $envClient->clearUserLock('n', 'u');
    eq($fake->last()['headers']['Authorization'] ?? null, 'Bearer from-env', 'key from LEASEGATE_API_KEY');
    eq((new Client('http://ctor.example', null, $fake))->baseUrl(), 'http://ctor.example', 'constructor URL beats the environment');
    putenv('LEASEGATE_API_KEY=');
    $fake->answer(204);
    (new Client(null, null, $fake))->clearUserLock('n', 'u');
    eq(isset($fake->last()['headers']['Authorization']), false, 'empty LEASEGATE_API_KEY sends no Authorization');
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
        $e = throws($class, fn () => $c->status('r'), "problem $slug");
        if ($e instanceof ProblemException) {
            eq([$e->status, $e->getCode(), $e->slug(), $e->detail], [$status, $status, $slug, "detail of $slug"], "problem $slug fields");
            check($e instanceof LeaseGateException, "$slug is a LeaseGateException");
        }
    }

    $fake->problem(429, 'abnormal-usage-detected', [], ['Retry-After' => '42']);
    $e = throws(AbnormalUsageException::class, fn () => $c->addUserLock('n', 'u'), 'banned user');
    eq($e?->retryAfter, 42, 'retryAfter from the Retry-After header');

    $fake->problem(422, 'validation', ['errors' => [
        ['field' => 'ttl_seconds', 'message' => 'must be an integer in 1..86400'],
        ['field' => 'owner', 'message' => 'is required'],
    ]]);
    $e = throws(ValidationException::class, fn () => $c->acquire('r', 'o', 0), 'validation problem');
    if ($e instanceof ValidationException) {
        eq(count($e->fieldErrors), 2, 'field errors');
        eq($e->errorsFor('ttl_seconds'), ['must be an integer in 1..86400'], 'ttl_seconds message');
        eq([$e->hasFieldError('owner'), $e->hasFieldError('resource')], [true, false], 'hasFieldError');
    }

    // Answers that are not problem+json keep the class their status implies.
    $fake->answer(502, '<html>bad gateway</html>', ['Content-Type' => 'text/html', 'Retry-After' => '3']);
    $e = throws(UnavailableException::class, fn () => $c->status('r'), 'proxy 502 page');
    eq([$e?->status, $e?->retryAfter, $e?->detail], [502, 3, '<html>bad gateway</html>'], '502 page fields');
    $fake->answer(404, 'not found');
    throws(NotFoundException::class, fn () => $c->status('r'), 'plain-text 404');
    $fake->answer(200, 'not json');
    throws(TransportException::class, fn () => $c->status('r'), 'success answer that is not JSON');
    $fake->answer(200, '{"lock":{"resource":"r"}}');
    throws(TransportException::class, fn () => $c->status('r'), 'success answer of the wrong shape');
    $fake->answer(200, '{"acquired":"yes"}');
    throws(TransportException::class, fn () => $c->acquire('r', 'o', 5), 'acquire answer of the wrong shape');

    // The drop-in class on top of the client.
    $lock = new Lock(1001, 'receiveDailyTask', $c);
    eq([$lock->attempts(), $lock->flagged(), $lock->banned()], [0, false, false], 'Lock before any attempt');
    $fake->answer(200, '{"acquired":true,"attempts":1,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}');
    eq($lock->addUserLock(), true, 'Lock first attempt');
    eq(json_decode((string) $fake->last()['body'], true), ['ttl_seconds' => 10], 'Lock default window is 10 s');
    eq($fake->last()['url'], 'http://gw.example:8080/user-locks/receiveDailyTask/1001', 'Lock URL uses the mid');
    $fake->answer(200, '{"acquired":false,"attempts":5,"flagged":true,"expires_at":"2026-11-30T09:30:10.000Z"}');
    eq($lock->addUserLock(30), false, 'Lock repeat');
    eq(json_decode((string) $fake->last()['body'], true), ['ttl_seconds' => 30], 'Lock window from $time');
    eq([$lock->attempts(), $lock->flagged()], [5, true], 'Lock attempts and flagged');
    $fake->problem(429, 'abnormal-usage-detected', [], ['Retry-After' => '120']);
    eq($lock->addUserLock(), false, 'Lock while banned');
    eq([$lock->banned(), $lock->retryAfter(), $lock->attempts()], [true, 120, 0], 'Lock ban state');
    $fake->problem(503, 'unavailable', [], ['Retry-After' => '1']);
    throws(UnavailableException::class, fn () => $lock->addUserLock(), 'Lock when Redis is down throws, never true');
    $fake->answer(204);
    eq($lock->clearUserLock(), true, 'Lock clear');
    $fake->problem(404, 'not-found');
    eq($lock->clearUserLock(), false, 'Lock clear with nothing there');
    $fake->problem(403, 'forbidden');
    throws(ForbiddenException::class, fn () => $lock->clearUserLock(), 'Lock clear forbidden throws');

    Lock::useClient($c);
    $fake->answer(200, '{"acquired":true,"attempts":1,"flagged":false,"expires_at":"2026-11-30T09:30:10.000Z"}');
    eq((new Lock('m-7', 'x'))->addUserLock(), true, 'Lock with the client from useClient()');
    eq($fake->last()['url'], 'http://gw.example:8080/user-locks/x/m-7', 'Lock::useClient URL');
    Lock::useClient(null);
}

function group_resource_locks(Ctx $ctx): void
{
    $c = $ctx->client();
    $res = $ctx->name('report');

    $a = $c->acquire($res, 'node-a', 30);
    eq($a->acquired, true, 'free resource is acquired');
    $lease = $a->lease;
    if (!check($lease !== null, 'acquire returns the lease')) {
        return;
    }
    eq([$lease->resource, $lease->owner], [$res, 'node-a'], 'lease resource and owner');
    check($lease->token > 0, 'token is positive, got ' . $lease->token);
    $ttl = expires_in_ms($lease);
    check($ttl >= 29_900 && $ttl <= 30_100, "expires_at - acquired_at = $ttl ms, want about 30000");
    check($lease->remainingMs() > 20_000, 'remainingMs ' . $lease->remainingMs());

    $again = $c->acquire($res, 'node-a', 60);
    eq($again->acquired, true, 'same owner re-acquires');
    eq($again->lease?->token, $lease->token, 'same owner keeps the token');
    check($again->lease !== null && $again->lease->expiresAt > $lease->expiresAt, 're-acquire moves expires_at');

    $b = $c->acquire($res, 'node-b', 30);
    eq([$b->acquired, $b->lease, $b->resource], [false, null, $res], 'another owner is told it is held');
    check($b->retryAfterMs > 0 && $b->retryAfterMs <= 60_000, "retry_after_ms {$b->retryAfterMs} in 1..60000");

    $st = $c->status($res);
    eq([$st->owner, $st->token], ['node-a', $lease->token], 'status shows the holder');

    throws(ForbiddenException::class, fn () => $c->release($res, 'node-b'), 'release by another owner is 403, never 404');
    throws(ForbiddenException::class, fn () => $c->release($res, 'node-a', $lease->token + 1), 'release under another token is 403');
    eq($c->status($res)->owner, 'node-a', 'refused releases change nothing');

    $renewed = $c->renew($res, 'node-a', 120);
    eq($renewed->token, $lease->token, 'renew keeps the token');
    check($renewed->expiresAt > $again->lease->expiresAt, 'renew moves expires_at (' . show($renewed->expiresAt) . ')');
    $c->renew($res, 'node-a', 120, $lease->token);
    throws(ForbiddenException::class, fn () => $c->renew($res, 'node-b', 120), 'renew by another owner is 403');

    $c->release($res, 'node-a', $lease->token);
    $e = throws(NotFoundException::class, fn () => $c->status($res), 'status after release is 404');
    eq($e?->status, 404, 'status code');
    throws(NotFoundException::class, fn () => $c->release($res, 'node-a'), 'second release is 404 (gone), not 403');
    throws(NotFoundException::class, fn () => $c->release($res, 'node-b'), 'release of nothing by anyone is 404');
    throws(NotFoundException::class, fn () => $c->renew($res, 'node-a', 30), 'renew after release is 404');

    $next = $c->acquire($res, 'node-b', 30);
    eq($next->acquired, true, 'free again after release');
    $c->release($res, 'node-b');
}

function group_fencing(Ctx $ctx): void
{
    $c = $ctx->client();
    $res = $ctx->name('fence');

    $t1 = $c->acquire($res, 'a', 30)->lease?->token;
    $c->release($res, 'a');
    $t2 = $c->acquire($res, 'b', 1)->lease?->token;
    check(is_int($t1) && is_int($t2) && $t2 > $t1, 'token after release grows: ' . show([$t1, $t2]));

    // b's 1 s lease expires; c takes over with a higher token.
    $expired = eventually(function () use ($c, $res): bool {
        try {
            $c->status($res);
            return false;
        } catch (NotFoundException) {
            return true;
        }
    }, 5.0);
    check($expired, 'a 1 s lease expires within 5 s');
    $t3 = $c->acquire($res, 'c', 30)->lease?->token;
    check(is_int($t3) && $t3 > $t2, 'token after expiry grows: ' . show([$t2, $t3]));

    // The former holder is told "not yours", not "gone".
    throws(ForbiddenException::class, fn () => $c->release($res, 'b', $t2), 'former holder releasing after expiry gets 403');
    throws(ForbiddenException::class, fn () => $c->renew($res, 'b', 30), 'former holder renewing after expiry gets 403');
    eq($c->status($res)->token, $t3, 'the new holder keeps its lease');

    // Same owner coming back after its own release still gets a new token.
    $c->release($res, 'c', $t3);
    $t4 = $c->acquire($res, 'c', 30)->lease?->token;
    check(is_int($t4) && $t4 > $t3, 'same owner, new lease, higher token: ' . show([$t3, $t4]));
    $c->release($res, 'c');
}

function group_validation(Ctx $ctx): void
{
    $c = $ctx->client();
    $res = $ctx->name('valid');

    $e = throws(ValidationException::class, fn () => $c->acquire($res, 'o', 0), 'ttl 0');
    eq([$e?->status, $e?->slug(), $e?->hasFieldError('ttl_seconds')], [422, 'validation', true], 'ttl 0 names ttl_seconds');
    $e = throws(ValidationException::class, fn () => $c->acquire($res, 'o', 86401), 'ttl over max_ttl');
    eq($e?->hasFieldError('ttl_seconds'), true, 'ttl over max names ttl_seconds');
    $e = throws(ValidationException::class, fn () => $c->acquire($res, '   ', 30), 'whitespace-only owner');
    eq($e?->hasFieldError('owner'), true, 'blank owner names owner');
    $e = throws(ValidationException::class, fn () => $c->acquire($res, " \t", -5), 'two bad fields');
    eq([$e?->hasFieldError('owner'), $e?->hasFieldError('ttl_seconds')], [true, true], 'both fields named');
    $e = throws(ValidationException::class, fn () => $c->acquire($res, 'o', 30, -1), 'negative wait_ms');
    eq($e?->hasFieldError('wait_ms'), true, 'negative wait_ms names wait_ms');
    $e = throws(ValidationException::class, fn () => $c->acquire(str_repeat('r', 256), 'o', 30), '256-byte resource');
    eq($e?->hasFieldError('resource'), true, '256-byte resource names resource');
    $e = throws(ValidationException::class, fn () => $c->acquire("bad\xffutf8", 'o', 30), 'resource that is not UTF-8');
    eq($e?->hasFieldError('resource'), true, 'invalid UTF-8 names resource');
    $e = throws(ValidationException::class, fn () => $c->acquire("line\nbreak", 'o', 30), 'resource with a control character');
    eq($e?->hasFieldError('resource'), true, 'control character names resource');
    $e = throws(ValidationException::class, fn () => $c->renew($res, 'o', 0), 'renew with ttl 0');
    eq($e?->hasFieldError('ttl_seconds'), true, 'renew ttl 0 names ttl_seconds');
    check($e === null || $e->getMessage() !== '', 'exception message is set');

    throws(NotFoundException::class, fn () => $c->status($res), 'rejected requests changed nothing');

    $long = $ctx->prefix . str_repeat('x', 255 - strlen($ctx->prefix));
    eq($c->acquire($long, 'o', 30)->acquired, true, '255-byte resource is accepted');
    $c->release($long, 'o');
}

function group_encoding(Ctx $ctx): void
{
    $c = $ctx->client();
    $names = [
        'space' => 'a b',
        'slash' => 'a/b',
        'encoded-slash' => 'a%2Fb',
        'percent' => '100%',
        'plus' => 'a+b',
        'query' => 'q?x=1&y=2#frag',
        'unicode' => 'ü',
        'cjk' => '日本語 ロック',
        'emoji' => '🔒',
        'braces' => '{a}',
        'colon' => 'a:fence',
        'sql' => "x'; DROP TABLE distributed_locks; --",
        'dot' => '.',
        'dotdot' => '..',
        'trailing-slash' => 'dir/',
        'backslash' => 'a\\b',
        'tilde' => '~user',
    ];
    $tokens = [];
    foreach ($names as $label => $suffix) {
        $res = $ctx->name('enc') . '|' . $suffix;
        if ($label === 'dot' || $label === 'dotdot') {
            $res = $suffix; // exactly "." and "..": shared between runs, released below
        }
        $r = $c->acquire($res, 'o-' . $label, 30);
        if (!eq($r->acquired, true, "acquire $label " . show($res))) {
            continue;
        }
        eq($r->lease?->resource, $res, "$label: lease names the exact resource");
        eq($c->status($res)->owner, 'o-' . $label, "$label: status finds it under the same name");
        $tokens[$label] = $r->lease?->token;
    }
    eq(count(array_unique($tokens)), count($tokens), 'every name is its own lock (all held at once, distinct tokens)');

    // Neighbours that an encoding bug would merge stay apart.
    $base = $ctx->name('enc') . '|';
    throws(NotFoundException::class, fn () => $c->status($base . 'a'), '"a" is not "a/b"');
    throws(NotFoundException::class, fn () => $c->status($base . 'a b/c'), '"a b/c" was never taken');
    eq($c->status($base . 'a%2Fb')->owner, 'o-encoded-slash', '"a%2Fb" is not "a/b"');
    eq($c->status($base . 'a/b')->owner, 'o-slash', '"a/b" is not "a%2Fb"');

    foreach ($names as $label => $suffix) {
        $res = ($label === 'dot' || $label === 'dotdot') ? $suffix : $ctx->name('enc') . '|' . $suffix;
        if (isset($tokens[$label])) {
            $c->release($res, 'o-' . $label, $tokens[$label]);
            throws(NotFoundException::class, fn () => $c->status($res), "$label: released");
        }
    }
}

function group_unavailable(Ctx $ctx): void
{
    $dead = new Client($ctx->deadUrl, null, $ctx->transport(), 3.0);
    $e = throws(TransportException::class, fn () => $dead->acquire('r', 'o', 30), 'no gateway listening');
    check($e === null || !($e instanceof ProblemException), 'a transport error is not a problem');
    $withPassword = new Client(str_replace('://', '://user:secret@', $ctx->deadUrl), null, $ctx->transport(), 3.0);
    $e = throws(TransportException::class, fn () => $withPassword->acquire('r', 'o', 30), 'no gateway at a URL with user:password@');
    check($e !== null && !str_contains($e->getMessage(), 'secret'), 'the message drops user:password@: ' . show($e?->getMessage()));

    if ($ctx->downUrl === null) {
        echo "   (LEASEGATE_DOWN_URL not set: Redis-down checks skipped)\n";
        return;
    }
    $down = $ctx->client($ctx->downUrl);
    $e = throws(UnavailableException::class, fn () => $down->acquire($ctx->name('down'), 'o', 30), 'acquire with Redis down');
    eq($e?->status, 503, 'status 503');
    check($e !== null && $e->retryAfter !== null && $e->retryAfter >= 1, 'Retry-After given: ' . show($e?->retryAfter));
    throws(UnavailableException::class, fn () => $down->status($ctx->name('down')), 'status with Redis down is 503, not 404');
    throws(UnavailableException::class, fn () => $down->release($ctx->name('down'), 'o'), 'release with Redis down is 503, not 404');
}

function group_waiting(Ctx $ctx): void
{
    $c = $ctx->client();

    $e = throws(ValidationException::class, fn () => $c->acquire($ctx->name('wait-max'), 'o', 30, 30_001), 'wait_ms over max_wait_ms');
    eq($e?->hasFieldError('wait_ms'), true, 'wait_ms over max names wait_ms');

    // Woken by a release from another process.
    $res = $ctx->name('wait-release');
    $holder = $c->acquire($res, 'holder', 30)->lease;
    if (!check($holder !== null, 'holder acquires')) {
        return;
    }
    $proc = proc_open(
        [PHP_BINARY, __DIR__ . '/release_after.php', $ctx->url, $ctx->transportName, $res, 'holder', '300'],
        [1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
        $pipes
    );
    if (!check(is_resource($proc), 'start the releasing process')) {
        return;
    }
    eq(trim((string) fgets($pipes[1])), 'ready', 'releasing process is ready');
    $start = microtime(true);
    $r = $c->acquire($res, 'waiter', 30, 5_000);
    $elapsed = microtime(true) - $start;
    $childOut = trim(stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]));
    fclose($pipes[1]);
    fclose($pipes[2]);
    $exit = proc_close($proc);
    eq([$exit, $childOut], [0, 'released'], 'the holder released while the waiter waited (so nothing was granted twice)');
    eq($r->acquired, true, sprintf('waiter acquires after the release (answered after %.2f s)', $elapsed));
    check($elapsed < 3.0, sprintf('waiter woken within 3 s of a release 0.3 s in, took %.2f s', $elapsed));
    check($r->lease !== null && $r->lease->token > $holder->token, 'waiter gets a higher token: ' . show([$holder->token, $r->lease?->token]));
    if ($r->acquired) {
        $c->release($res, 'waiter');
    }

    // Woken by expiry.
    $res = $ctx->name('wait-expiry');
    $c->acquire($res, 'holder', 1);
    $start = microtime(true);
    $r = $c->acquire($res, 'waiter', 30, 5_000);
    $elapsed = microtime(true) - $start;
    eq($r->acquired, true, sprintf('waiter acquires when a 1 s lease expires (answered after %.2f s)', $elapsed));
    check($elapsed < 4.0, sprintf('waiter woken within 4 s, took %.2f s', $elapsed));
    if ($r->acquired) {
        $c->release($res, 'waiter');
    }

    // Held all along: answered "not acquired" once wait_ms has passed.
    $res = $ctx->name('wait-timeout');
    $c->acquire($res, 'holder', 30);
    $start = microtime(true);
    $r = $c->acquire($res, 'waiter', 30, 400);
    $elapsed = microtime(true) - $start;
    eq($r->acquired, false, 'waiter on a held lock is not granted');
    check($elapsed >= 0.35 && $elapsed < 3.0, sprintf('answered once wait_ms (0.4 s) passed, took %.2f s', $elapsed));
    eq($c->status($res)->owner, 'holder', 'holder still holds');
    $c->release($res, 'holder');
}

function group_user_locks(Ctx $ctx): void
{
    $c = $ctx->client();
    $name = 'php.daily-task_1';
    $user = $ctx->willClear($ctx->name('user1')); // flagged on its 5th attempt

    $first = $c->addUserLock($name, $user);
    eq([$first->acquired, $first->attempts, $first->flagged], [true, 1, false], 'first attempt acquires');
    $left = (float) $first->expiresAt->format('U.v') - microtime(true);
    check($left > 5 && $left <= 11, sprintf('default window about 10 s, %.1f s left', $left));
    for ($n = 2; $n <= 5; $n++) {
        $r = $c->addUserLock($name, $user);
        eq([$r->acquired, $r->attempts], [false, $n], "attempt $n is refused and counted");
        eq($r->flagged, $n >= 5, "attempt $n flagged (max_attempts 5)");
        eq([$r->rateLimit?->policy, $r->rateLimit?->quota, $r->rateLimit?->remaining], [$name, 5, 5 - $n], "attempt $n: RateLimit fields");
    }
    eq($c->addUserLock($name, $ctx->name('user2'))->acquired, true, 'another user is independent');
    eq($c->addUserLock($name . '-other', $user)->acquired, true, 'another lock name is independent');

    $c->clearUserLock($name, $user);
    $r = $c->addUserLock($name, $user);
    eq([$r->acquired, $r->attempts, $r->flagged], [true, 1, false], 'after clearUserLock the next attempt acquires');
    $c->clearUserLock($name, $user);
    throws(NotFoundException::class, fn () => $c->clearUserLock($name, $user), 'clearing twice is 404');

    // The window ends by itself after its TTL.
    $short = $ctx->name('short');
    eq($c->addUserLock($name, $short, 1)->acquired, true, '1 s window opens');
    eq($c->addUserLock($name, $short, 1)->acquired, false, 'repeat inside the window');
    usleep(1_300_000);
    $r = $c->addUserLock($name, $short, 1);
    eq([$r->acquired, $r->attempts], [true, 1], 'after the window a new one opens');

    // User ids are path segments: encoded, and every id is its own counter.
    $odd = $ctx->name('u') . '/ü ?#%2F';
    eq($c->addUserLock($name, $odd)->acquired, true, 'user id with slash, unicode, space, ?, #, %');
    eq($c->addUserLock($name, $odd)->attempts, 2, 'same odd user id counts on');
    eq($c->addUserLock($name, $ctx->name('u'))->acquired, true, 'its prefix is another user');
    $c->clearUserLock($name, $odd);

    $e = throws(ValidationException::class, fn () => $c->addUserLock($name, '   '), 'whitespace-only user id');
    eq($e?->hasFieldError('user_id'), true, 'names user_id');
    $e = throws(ValidationException::class, fn () => $c->addUserLock('bad name!', $user), 'name outside [A-Za-z0-9._-]');
    eq($e?->hasFieldError('name'), true, 'names name');
    throws(ValidationException::class, fn () => $c->addUserLock(str_repeat('n', 65), $user), '65-byte name');
    throws(ValidationException::class, fn () => $c->addUserLock($name, str_repeat('u', 129)), '129-byte user id');
    $e = throws(ValidationException::class, fn () => $c->addUserLock($name, $user, 0), 'ttl 0');
    eq($e?->hasFieldError('ttl_seconds'), true, 'names ttl_seconds');

    // The drop-in class, as the old code calls it.
    Lock::useClient($c);
    $mid = random_int(1_000_000, 9_999_999);
    eq((new Lock($mid, 'receiveDailyTask'))->addUserLock(), true, 'Lock: first addUserLock() is true');
    $lock = new Lock($mid, 'receiveDailyTask');
    eq($lock->addUserLock(), false, 'Lock: second addUserLock() is false');
    eq([$lock->attempts(), $lock->flagged(), $lock->banned()], [2, false, false], 'Lock: attempts 2');
    eq($lock->addUserLock(), false, 'Lock: third addUserLock() is false');
    eq($lock->attempts(), 3, 'Lock: attempts 3');
    eq($lock->clearUserLock(), true, 'Lock: clearUserLock() releases');
    eq($lock->clearUserLock(), false, 'Lock: clearUserLock() with nothing there');
    eq($lock->addUserLock(10), true, 'Lock: after clear, addUserLock(10) is true again');
    eq($lock->attempts(), 1, 'Lock: attempts back to 1');
    eq((new Lock((string) $mid, 'receiveDailyTask'))->addUserLock(), false, 'Lock: string and int mid are the same user');
    throws(ValidationException::class, fn () => (new Lock($mid, 'bad name!'))->addUserLock(), 'Lock: invalid name throws');
    $lock->clearUserLock();
    Lock::useClient(null);
}

function group_user_locks_unavailable(Ctx $ctx): void
{
    if ($ctx->downUrl === null) {
        echo "   (LEASEGATE_DOWN_URL not set: skipped)\n";
        return;
    }
    $down = $ctx->client($ctx->downUrl);
    $e = throws(UnavailableException::class, fn () => $down->addUserLock('n', $ctx->name('down')), 'addUserLock with Redis down');
    check($e !== null && $e->retryAfter !== null && $e->retryAfter >= 1, 'Retry-After given: ' . show($e?->retryAfter));
    throws(UnavailableException::class, fn () => (new Lock(1, 'n', $down))->addUserLock(), 'Lock::addUserLock with Redis down throws, never true');
    $dead = new Client($ctx->deadUrl, null, $ctx->transport(), 3.0);
    throws(TransportException::class, fn () => (new Lock(1, 'n', $dead))->addUserLock(), 'Lock::addUserLock with no gateway throws');
}

function group_bans(Ctx $ctx): void
{
    $c = $ctx->client();
    $user = $ctx->willClear($ctx->name('banned'));
    $c->request('POST', '/abuse/bans/' . rawurlencode($user), ['seconds' => 60, 'reason' => 'php client test']);

    $e = throws(AbnormalUsageException::class, fn () => $c->addUserLock('php.ban', $user), 'banned user gets 429');
    eq([$e?->status, $e?->slug()], [429, 'abnormal-usage-detected'], 'problem');
    check($e !== null && $e->retryAfter !== null && $e->retryAfter >= 1 && $e->retryAfter <= 60, 'retryAfter in 1..60: ' . show($e?->retryAfter));
    eq([$e?->rateLimit?->policy, $e?->rateLimit?->remaining, $e?->rateLimit?->resetSeconds], ['php.ban', 0, $e?->retryAfter], 'a ban carries RateLimit: none left, reset at the ban\'s end');

    $lock = new Lock($user, 'php.ban', $c);
    eq($lock->addUserLock(), false, 'Lock: banned user is refused');
    eq([$lock->banned(), $lock->attempts()], [true, 0], 'Lock: banned, attempt not counted');
    check(($lock->retryAfter() ?? 0) >= 1, 'Lock: retryAfter ' . show($lock->retryAfter()));

    $c->request('DELETE', '/abuse/bans/' . rawurlencode($user));
    eq($lock->addUserLock(), true, 'Lock: after unban the first attempt acquires');
    eq($lock->banned(), false, 'Lock: no longer banned');
    $lock->clearUserLock();
}

// ------------------------------------------------------------------ main

function transports(): array
{
    return CurlTransport::available() ? ['stream', 'curl'] : ['stream'];
}

const USAGE = <<<'TXT'
usage: php tests/run.php [--group=NAME]... [--transport=NAME]... | --list | --transports | --help
  --group=NAME      run only this group (repeatable; see --list)
  --transport=NAME  run only with this transport (repeatable; see --transports)
Env: LEASEGATE_URL, LEASEGATE_API_KEY, LEASEGATE_DOWN_URL, LEASEGATE_DEAD_URL.

TXT;

/**
 * The command line, strictly: unlike getopt(), which skips what it does
 * not know, anything unknown is an error.
 *
 * @param list<string> $args
 * @return array{list: bool, transports: bool, help: bool, group: list<string>, transport: list<string>}
 */
function parse_args(array $args): array
{
    $o = ['list' => false, 'transports' => false, 'help' => false, 'group' => [], 'transport' => []];
    for ($i = 0; $i < count($args); $i++) {
        $a = $args[$i];
        if (in_array($a, ['--list', '--transports', '--help', '-h'], true)) {
            $o[$a === '-h' ? 'help' : substr($a, 2)] = true;
            continue;
        }
        if (preg_match('/^--(group|transport)(?:=(.*))?$/s', $a, $m) === 1) {
            $v = $m[2] ?? ($args[++$i] ?? null);
            if ($v === null || $v === '') {
                throw new \InvalidArgumentException("--$m[1] needs a value");
            }
            $o[$m[1]][] = $v;
            continue;
        }
        throw new \InvalidArgumentException(sprintf('unknown argument %s', json_encode($a, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE)));
    }
    return $o;
}

try {
    $opts = parse_args(array_slice($argv, 1));
} catch (\InvalidArgumentException $e) {
    fwrite(STDERR, 'run.php: ' . $e->getMessage() . "\n" . USAGE);
    exit(2);
}
if ($opts['help']) {
    echo USAGE;
    exit(0);
}
if ($opts['list']) {
    echo implode("\n", array_keys(groups())), "\n";
    exit(0);
}
if ($opts['transports']) {
    echo implode("\n", transports()), "\n";
    exit(0);
}
$selected = $opts['group'] !== [] ? $opts['group'] : array_keys(groups());
$selectedTransports = $opts['transport'] !== [] ? $opts['transport'] : transports();
foreach ($selected as $g) {
    if (!isset(groups()[$g])) {
        fwrite(STDERR, "unknown group $g; try --list\n");
        exit(2);
    }
}
foreach ($selectedTransports as $t) {
    if (!in_array($t, transports(), true)) {
        fwrite(STDERR, "transport $t is not available here; try --transports\n");
        exit(2);
    }
}

/**
 * Clears every user the run flagged or banned from the flagged registry
 * (flags and any ban); 404 means there was nothing left. Returns the
 * number of users it could not clear.
 */
function clear_flagged(string $url): int
{
    $c = new Client($url);
    $left = 0;
    foreach (array_keys(Ctx::$toClear) as $user) {
        try {
            $c->request('DELETE', '/abuse/flagged/' . rawurlencode($user));
        } catch (NotFoundException) {
            // nothing there (the group never got as far as flagging)
        } catch (LeaseGateException $e) {
            fwrite(STDERR, sprintf("cleanup: could not clear flagged user %s: %s\n", $user, $e->getMessage()));
            $left++;
        }
    }
    Ctx::$toClear = [];
    return $left;
}

$env = static function (string $name): ?string {
    $v = getenv($name);
    return is_string($v) && $v !== '' ? $v : null;
};
$prefix = 'php-' . bin2hex(random_bytes(4));
$failedGroups = [];
foreach ($selectedTransports as $t) {
    $ctx = new Ctx(
        $t,
        $env('LEASEGATE_URL') ?? Client::DEFAULT_URL,
        $env('LEASEGATE_DOWN_URL'),
        $env('LEASEGATE_DEAD_URL') ?? 'http://127.0.0.1:1',
        $prefix,
    );
    printf("# transport %s, gateway %s, PHP %s\n", $t, $ctx->url, PHP_VERSION);
    foreach ($selected as $g) {
        [$title, $fn] = groups()[$g];
        if (run_group("$g ($t)", $title, fn () => $fn($ctx)) > 0) {
            $failedGroups[] = "$g ($t)";
        }
    }
}
$notCleared = clear_flagged($env('LEASEGATE_URL') ?? Client::DEFAULT_URL);
if ($notCleared > 0) {
    $failedGroups[] = "cleanup ($notCleared users left flagged)";
}
printf(
    "\n%s: %d checks, %d failed%s\n",
    $failedGroups === [] ? 'PASS' : 'FAIL',
    Harness::$checks,
    Harness::$failures,
    $failedGroups === [] ? '' : ' in: ' . implode(', ', $failedGroups)
);
exit($failedGroups === [] ? 0 : 1);
