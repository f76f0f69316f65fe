<?php

declare(strict_types=1);

namespace LeaseGate;

use LeaseGate\Transport\CurlTransport;
use LeaseGate\Transport\Response;
use LeaseGate\Transport\StreamTransport;
use LeaseGate\Transport\Transport;

/**
 * Client of a leasegate gateway: resource locks with fencing tokens,
 * per-user locks (the old Lock class's counters), counting semaphores and
 * claims with once() (Primitives), leader election with onlyOnLeader()
 * (Elections).
 *
 * Every method makes one HTTP request and never retries on its own, so an
 * acquire is never sent twice behind your back. Errors are exceptions:
 * ProblemException subclasses for gateway answers (NotFoundException,
 * ForbiddenException, ValidationException, UnavailableException, ...),
 * TransportException when no usable answer arrived. Contention on acquire
 * is not an error: it is an AcquireResult with acquired === false.
 *
 *     $client = new Client();                       // LEASEGATE_URL, LEASEGATE_API_KEY
 *     $r = $client->acquire('daily-report', gethostname(), 60);
 *     if ($r->acquired) {
 *         try { work($r->lease->token); }
 *         finally { $client->release('daily-report', gethostname(), $r->lease->token); }
 *     }
 */
final class Client
{
    use Primitives;
    use Elections;

    public const DEFAULT_URL = 'http://127.0.0.1:8080';

    /** Seconds per request by default, on top of any wait_ms. */
    public const TIMEOUT = 3.0;

    private readonly string $baseUrl;
    /** The URL requests go to: $baseUrl, or http://localhost on a Unix socket. */
    private readonly string $httpBase;
    private readonly ?string $unixSocket;
    private readonly ?string $apiKey;
    private readonly Transport $transport;

    /**
     * @param ?string $baseUrl gateway URL (http://host:port, https://..., or unix:/path for
     *        a gateway on a Unix domain socket); null: $LEASEGATE_URL, else http://127.0.0.1:8080
     * @param ?string $apiKey sent as "Authorization: Bearer"; null: $LEASEGATE_API_KEY
     *                        (unset or empty: no header, for a gateway in open mode)
     * @param ?Transport $transport null: curl when the extension is loaded, else PHP streams
     * @param float $timeout seconds per request, connecting included, on top of any wait_ms
     *        (the default suits PHP-FPM: a gateway that stops answering holds a worker
     *        that long, not longer)
     * @param string|\Closure|null $traceparent the caller's W3C trace context, sent
     *        as the "traceparent" header so that the gateway's spans continue the
     *        caller's trace (docs/observability.md): a fixed value, or a closure
     *        called before every request that returns the current one (or null
     *        for none), e.g. from OpenTelemetry's propagator; a value that is not
     *        a version-00 traceparent is not sent
     * @param float $connectTimeout seconds to wait for the connection (within $timeout)
     */
    public function __construct(
        ?string $baseUrl = null,
        ?string $apiKey = null,
        ?Transport $transport = null,
        private readonly float $timeout = self::TIMEOUT,
        private readonly string|\Closure|null $traceparent = null,
        private readonly float $connectTimeout = Transport::CONNECT_TIMEOUT,
    ) {
        if ($timeout <= 0 || $connectTimeout <= 0) {
            throw new \InvalidArgumentException('leasegate: timeout and connectTimeout must be positive');
        }
        if (is_string($traceparent) && !self::validTraceparent($traceparent)) {
            throw new \InvalidArgumentException(
                sprintf(
                    'leasegate: traceparent %s is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)',
                    json_encode($traceparent),
                ),
            );
        }
        $baseUrl ??= self::env('LEASEGATE_URL') ?? self::DEFAULT_URL;
        if (preg_match('#^unix:(/[^?\#]*[^/?\#])/*$#i', $baseUrl, $m) === 1) {
            $this->unixSocket = $m[1];
            $this->baseUrl = 'unix:' . $m[1];
            $this->httpBase = 'http://localhost';
        } elseif (preg_match('#^https?://[^/?\#]+#i', $baseUrl) === 1) {
            $this->unixSocket = null;
            $this->baseUrl = $this->httpBase = rtrim($baseUrl, '/');
        } else {
            throw new \InvalidArgumentException(sprintf(
                'leasegate: gateway URL %s must start with http://, https:// or unix:/ (a socket\'s absolute path)',
                json_encode($baseUrl),
            ));
        }
        $apiKey ??= self::env('LEASEGATE_API_KEY');
        $this->apiKey = $apiKey === '' ? null : $apiKey;
        $this->transport = $transport ?? self::defaultTransport();
    }

    /** A client configured from LEASEGATE_URL and LEASEGATE_API_KEY. */
    public static function fromEnvironment(): self
    {
        return new self();
    }

    /** curl when the extension is loaded, else the stream wrapper. */
    public static function defaultTransport(): Transport
    {
        return CurlTransport::available() ? new CurlTransport() : new StreamTransport();
    }

    public function baseUrl(): string
    {
        return $this->baseUrl;
    }

    /**
     * POST /locks/{resource}. With $waitMs > 0 the gateway waits up to that
     * long for the holder to release or expire before answering.
     * $lockDelayMs (lock_delay_ms, 0..60000; null: the gateway's
     * --default-lock-delay): should this lease end by expiry rather than
     * by a release, no other owner gets the lock until that long after it
     * expired (docs/fencing.md, "Lock delay").
     *
     * @throws ValidationException bad resource, owner, ttl, wait or lock delay
     * @throws UnavailableException Redis is down: nothing was granted
     * @throws LeaseGateException
     */
    public function acquire(
        string $resource,
        string $owner,
        int $ttlSeconds,
        int $waitMs = 0,
        ?int $lockDelayMs = null,
    ): AcquireResult {
        $body = ['owner' => $owner, 'ttl_seconds' => $ttlSeconds];
        if ($waitMs !== 0) {
            $body['wait_ms'] = $waitMs;
        }
        if ($lockDelayMs !== null) {
            $body['lock_delay_ms'] = $lockDelayMs;
        }
        $data = $this->call(
            'POST',
            '/locks/' . self::segment($resource, 'resource'),
            $body,
            null,
            max(0, $waitMs) / 1000,
        );
        return AcquireResult::fromArray($data);
    }

    /**
     * GET /locks/{resource}: the live lease.
     *
     * @throws NotFoundException no lock, or it expired
     * @throws LeaseGateException
     */
    public function status(string $resource): Lease
    {
        $data = $this->call('GET', '/locks/' . self::segment($resource, 'resource'));
        return Lease::fromArray(is_array($data) ? ($data['lock'] ?? null) : null);
    }

    /**
     * DELETE /locks/{resource}. Give the lease's $token to release only
     * that lease (a former holder whose lease expired and was re-granted
     * gets ForbiddenException instead of releasing the new holder's).
     *
     * @throws NotFoundException nothing to release: no lock, or it expired
     * @throws ForbiddenException held by another owner, or under another token
     * @throws LeaseGateException
     */
    public function release(string $resource, string $owner, ?int $token = null): void
    {
        $query = ['owner' => $owner];
        if ($token !== null) {
            $query['token'] = (string) $token;
        }
        $this->call('DELETE', '/locks/' . self::segment($resource, 'resource'), null, $query);
    }

    /**
     * POST /locks: the locks on every one of $resources (1..64 distinct),
     * all or none (docs/lock-sets.md). Returns the list of Lease, one per
     * resource in order, each with its own token, or null when a member is
     * held by another owner (then none of the set was taken). With
     * $waitMs > 0 the gateway waits until the whole set is free at once.
     *
     * @param list<string> $resources
     * @return list<Lease>|null
     * @throws ValidationException bad resources, owner, ttl, wait or lock delay
     * @throws UnavailableException Redis is down: nothing was granted
     * @throws LeaseGateException
     */
    public function acquireSet(
        array $resources,
        string $owner,
        int $ttlSeconds,
        int $waitMs = 0,
        ?int $lockDelayMs = null,
    ): ?array {
        $body = ['resources' => array_values($resources), 'owner' => $owner, 'ttl_seconds' => $ttlSeconds];
        if ($waitMs !== 0) {
            $body['wait_ms'] = $waitMs;
        }
        if ($lockDelayMs !== null) {
            $body['lock_delay_ms'] = $lockDelayMs;
        }
        $data = $this->call('POST', '/locks', $body, null, max(0, $waitMs) / 1000);
        if (!is_array($data) || !is_bool($data['acquired'] ?? null)) {
            throw new TransportException('leasegate: unexpected answer to a lock set: no boolean "acquired"');
        }
        if (!$data['acquired']) {
            return null;
        }
        if (!is_array($data['locks'] ?? null)) {
            throw new TransportException('leasegate: unexpected answer to a lock set: acquired without locks');
        }
        return array_map(static fn ($l) => Lease::fromArray($l), array_values($data['locks']));
    }

    /**
     * DELETE /locks: ends $owner's locks on $resources.
     *
     * @param list<string> $resources
     * @return array{released: list<string>, not_held: list<string>}
     * @throws LeaseGateException
     */
    public function releaseSet(array $resources, string $owner): array
    {
        $data = $this->call('DELETE', '/locks', ['owner' => $owner, 'resources' => array_values($resources)]);
        if (!is_array($data) || !is_array($data['released'] ?? null) || !is_array($data['not_held'] ?? null)) {
            throw new TransportException('leasegate: unexpected answer to a lock set release');
        }
        return ['released' => $data['released'], 'not_held' => $data['not_held']];
    }

    /**
     * POST /locks/{resource}/renew: expires_at = now + ttl, token unchanged.
     *
     * @throws NotFoundException no lock or it expired (acquire again)
     * @throws ForbiddenException held by another owner (or another token)
     * @throws LeaseGateException
     */
    public function renew(string $resource, string $owner, int $ttlSeconds, ?int $token = null): Lease
    {
        $body = ['owner' => $owner, 'ttl_seconds' => $ttlSeconds];
        if ($token !== null) {
            $body['token'] = $token;
        }
        $data = $this->call('POST', '/locks/' . self::segment($resource, 'resource') . '/renew', $body);
        return Lease::fromArray(is_array($data) ? ($data['lock'] ?? null) : null);
    }

    /**
     * POST /user-locks/{name}/{user_id}: one attempt in the user's window.
     * $ttlSeconds null uses the gateway's default (10 s).
     *
     * @throws AbnormalUsageException the user is banned ($retryAfter seconds left)
     * @throws ValidationException bad name, user id or ttl
     * @throws LeaseGateException
     */
    public function addUserLock(string $name, string $userId, ?int $ttlSeconds = null): UserLockResult
    {
        $body = $ttlSeconds === null ? null : ['ttl_seconds' => $ttlSeconds];
        $path = self::userLockPath($name, $userId);
        $response = $this->send('POST', $path, $body);
        if ($response->status === 429) {
            $e = ProblemException::fromResponse($response);
            if ($e instanceof AbnormalUsageException) {
                $e->rateLimit = RateLimit::fromResponse($response);
            }
            throw $e;
        }
        return UserLockResult::fromArray(self::decode('POST', $path, $response), RateLimit::fromResponse($response));
    }

    /**
     * DELETE /user-locks/{name}/{user_id}: ends the window (the next
     * addUserLock acquires again).
     *
     * @throws NotFoundException there was no counter
     * @throws LeaseGateException
     */
    public function clearUserLock(string $name, string $userId): void
    {
        $this->call('DELETE', self::userLockPath($name, $userId));
    }

    /**
     * POST /abuse/backtest (ops role): replays a candidate policy over the
     * lock's attempt log and answers what was recorded, what the policy
     * in force did, what the candidate would have done and the users that
     * differ (newly_flagged, no_longer_flagged, newly_banned,
     * no_longer_banned, ban_length_changed: each with count, users and
     * next_cursor). It changes nothing. $policy holds policy-file fields
     * (max_attempts, ban_after_flags, ban_seconds, factor,
     * max_ban_seconds, shadow); what it leaves out stays as in force.
     * $since and $until are RFC 3339 times (null: the whole log).
     *
     * @param array<string, int|float|bool> $policy
     * @param list<string> $users
     * @return array<string, mixed>
     *
     * @throws ValidationException an unknown lock, a range outside the
     *         retention, a policy the policy file would refuse
     * @throws LeaseGateException
     */
    public function backtest(
        string $lock,
        array $policy = [],
        ?string $since = null,
        ?string $until = null,
        array $users = [],
        ?int $limit = null,
        ?string $cursor = null,
    ): array {
        $body = ['lock' => $lock];
        if ($policy !== []) {
            $body['policy'] = $policy;
        }
        foreach (['since' => $since, 'until' => $until, 'limit' => $limit, 'cursor' => $cursor] as $k => $v) {
            if ($v !== null) {
                $body[$k] = $v;
            }
        }
        if ($users !== []) {
            $body['users'] = $users;
        }
        $answer = $this->call('POST', '/abuse/backtest', $body);
        return is_array($answer) ? $answer : [];
    }

    /**
     * One raw request against the gateway (for routes this class has no
     * method for, such as the ops API). $path must already be encoded.
     * Returns the decoded JSON body (null for 204) or throws as the other
     * methods do.
     *
     * @param ?array<string, mixed> $body
     * @param ?array<string, string> $query
     *
     * @throws LeaseGateException
     */
    public function request(string $method, string $path, ?array $body = null, ?array $query = null): mixed
    {
        return $this->call($method, $path, $body, $query);
    }

    /**
     * A version-00 W3C traceparent with a trace id and a span id that are
     * not all zeros (https://www.w3.org/TR/trace-context/#traceparent-header).
     */
    private static function validTraceparent(string $v): bool
    {
        return preg_match('/^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/D', $v) === 1;
    }

    private static function userLockPath(string $name, string $userId): string
    {
        return '/user-locks/' . self::segment($name, 'name') . '/' . self::segment($userId, 'user_id');
    }

    /**
     * Percent-encodes one path segment (RFC 3986: everything but
     * unreserved characters, so "/", "?", "#", "%" and spaces stay inside
     * the segment). "." and ".." become %2E and %2E%2E, so no client
     * library or proxy removes them as dot-segments. An empty segment
     * cannot reach the route at all, so it is refused here instead of
     * turning into a confusing 404.
     */
    private static function segment(string $value, string $what): string
    {
        if ($value === '') {
            throw new \InvalidArgumentException(sprintf('leasegate: %s must not be empty', $what));
        }
        if ($value === '.' || $value === '..') {
            return str_replace('.', '%2E', $value);
        }
        return rawurlencode($value);
    }

    /**
     * @param ?array<string, mixed> $body
     * @param ?array<string, string> $query
     */
    private function call(
        string $method,
        string $path,
        ?array $body = null,
        ?array $query = null,
        float $extraTimeout = 0.0,
        ?int &$status = null,
    ): mixed {
        $response = $this->send($method, $path, $body, $query, $extraTimeout);
        $status = $response->status;
        return self::decode($method, $path, $response);
    }

    /**
     * @param ?array<string, mixed> $body
     * @param ?array<string, string> $query
     */
    private function send(
        string $method,
        string $path,
        ?array $body = null,
        ?array $query = null,
        float $extraTimeout = 0.0,
    ): Response {
        $url = $this->httpBase . $path;
        if ($query !== null && $query !== []) {
            $url .= '?' . http_build_query($query, '', '&', PHP_QUERY_RFC3986);
        }
        $headers = ['Accept' => 'application/json, application/problem+json'];
        if ($this->apiKey !== null) {
            $headers['Authorization'] = 'Bearer ' . $this->apiKey;
        }
        $traceparent = $this->traceparent instanceof \Closure ? ($this->traceparent)() : $this->traceparent;
        if (is_string($traceparent) && self::validTraceparent($traceparent)) {
            $headers['traceparent'] = $traceparent;
        }
        $payload = null;
        if ($body !== null) {
            try {
                $payload = json_encode($body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
            } catch (\JsonException $e) {
                throw new \InvalidArgumentException(
                    'leasegate: request cannot be encoded as JSON (strings must be UTF-8): ' . $e->getMessage(),
                    0,
                    $e,
                );
            }
            $headers['Content-Type'] = 'application/json';
        }
        $timeout = $this->timeout + $extraTimeout;
        return $this->transport->send(
            $method,
            $url,
            $headers,
            $payload,
            $timeout,
            $this->connectTimeout,
            $this->unixSocket,
        );
    }

    private static function decode(string $method, string $path, Response $response): mixed
    {
        if ($response->status < 200 || $response->status > 299) {
            throw ProblemException::fromResponse($response);
        }
        if ($response->status === 204 || $response->body === '') {
            return null;
        }
        try {
            return json_decode($response->body, true, 64, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new TransportException(
                sprintf(
                    'leasegate: %s %s: answer %d is not JSON: %s',
                    $method,
                    $path,
                    $response->status,
                    $e->getMessage(),
                ),
                0,
                $e,
            );
        }
    }

    private static function env(string $name): ?string
    {
        $value = getenv($name);
        return is_string($value) && $value !== '' ? $value : null;
    }
}
