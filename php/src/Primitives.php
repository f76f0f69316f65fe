<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * Counting semaphores and claims (docs/semaphores.md, docs/claims.md),
 * as methods of Client.
 *
 * @internal used by Client only
 */
trait Primitives
{
    /**
     * POST /semaphores/{name}: one of $limit permits, for $ttlSeconds. A
     * full semaphore is a PermitResult with acquired === false.
     *
     * @throws LimitMismatchException $limit differs from the limit in force
     * @throws LeaseGateException
     */
    public function acquirePermit(
        string $name,
        string $owner,
        int $limit,
        int $ttlSeconds,
        int $waitMs = 0,
    ): PermitResult {
        $body = ['owner' => $owner, 'ttl_seconds' => $ttlSeconds, 'limit' => $limit];
        if ($waitMs !== 0) {
            $body['wait_ms'] = $waitMs;
        }
        $data = $this->call('POST', '/semaphores/' . self::segment($name, 'name'), $body, null, max(0, $waitMs) / 1000);
        return PermitResult::fromArray($data);
    }

    /**
     * DELETE /semaphores/{name}: gives the owner's permit back.
     *
     * @throws NotFoundException no live permit at all
     * @throws ForbiddenException permits are held, none by $owner (or under $token)
     * @throws LeaseGateException
     */
    public function releasePermit(string $name, string $owner, ?int $token = null): void
    {
        $query = ['owner' => $owner];
        if ($token !== null) {
            $query['token'] = (string) $token;
        }
        $this->call('DELETE', '/semaphores/' . self::segment($name, 'name'), null, $query);
    }

    /**
     * POST /semaphores/{name}/renew: expires_at = now + ttl, token unchanged.
     *
     * @throws NotFoundException|ForbiddenException as releasePermit
     * @throws LeaseGateException
     */
    public function renewPermit(string $name, string $owner, int $ttlSeconds): Permit
    {
        $data = $this->call(
            'POST',
            '/semaphores/' . self::segment($name, 'name') . '/renew',
            ['owner' => $owner, 'ttl_seconds' => $ttlSeconds],
        );
        return Permit::fromArray(is_array($data) ? ($data['permit'] ?? null) : null);
    }

    /**
     * GET /semaphores/{name}: the live permits, earliest expiry first.
     *
     * @return array{limit: int, holders: list<Permit>}
     *
     * @throws NotFoundException no live permit
     * @throws LeaseGateException
     */
    public function semaphoreStatus(string $name): array
    {
        $data = $this->call('GET', '/semaphores/' . self::segment($name, 'name'));
        if (!is_array($data) || !is_int($data['limit'] ?? null) || !is_array($data['holders'] ?? null)) {
            throw new TransportException('leasegate: unexpected answer to a semaphore status');
        }
        $holders = array_values(array_map(Permit::fromArray(...), $data['holders']));
        return ['limit' => $data['limit'], 'holders' => $holders];
    }

    /**
     * POST /claims/{scope}/{key}: pending and $created (do the work now),
     * pending again for the same owner (its expiry moved), or done with the
     * stored result (do not do the work again).
     *
     * @throws ClaimInProgressException another owner is doing it ($retryAfter seconds left)
     * @throws LeaseGateException
     */
    public function claim(string $scope, string $key, string $owner, int $ttlSeconds): ClaimResult
    {
        $data = $this->call(
            'POST',
            self::claimPath($scope, $key),
            ['owner' => $owner, 'ttl_seconds' => $ttlSeconds],
            null,
            0.0,
            $status,
        );
        return ClaimResult::fromArray($data, $status === 201);
    }

    /**
     * POST /claims/{scope}/{key}/complete: stores $result (any value
     * json_encode takes, at most 8 KiB encoded) for $keepSeconds (null:
     * the gateway's default, 7 days). Completing again with the same
     * token and result answers the same done state.
     *
     * @throws ForbiddenException another owner or token, or another completion
     * @throws NotFoundException nothing pending (the lease expired, say)
     * @throws LeaseGateException
     */
    public function completeClaim(Claim $claim, mixed $result, ?int $keepSeconds = null): ClaimResult
    {
        $body = ['owner' => $claim->owner, 'token' => $claim->token, 'result' => $result];
        if ($keepSeconds !== null) {
            $body['keep_seconds'] = $keepSeconds;
        }
        return ClaimResult::fromArray(
            $this->call('POST', self::claimPath($claim->scope, $claim->key) . '/complete', $body),
        );
    }

    /**
     * DELETE /claims/{scope}/{key}: abandons the pending claim, so another
     * caller may claim at once.
     *
     * @throws NotFoundException|ForbiddenException
     * @throws LeaseGateException
     */
    public function abandonClaim(Claim $claim): void
    {
        $this->call(
            'DELETE',
            self::claimPath($claim->scope, $claim->key),
            null,
            ['owner' => $claim->owner, 'token' => (string) $claim->token],
        );
    }

    /**
     * GET /claims/{scope}/{key}.
     *
     * @throws NotFoundException nothing pending or done
     * @throws LeaseGateException
     */
    public function getClaim(string $scope, string $key): ClaimResult
    {
        return ClaimResult::fromArray($this->call('GET', self::claimPath($scope, $key)));
    }

    /**
     * Runs $fn at most once per ($scope, $key) across every caller of the
     * gateway and returns its result; every later caller gets the stored
     * result (decoded as json_decode(..., true) does) without running $fn.
     *
     * $fn receives a callable that extends the claim's lease by
     * $ttlSeconds: PHP has no background thread to do it, so either choose
     * a $ttlSeconds longer than $fn can take, or call it now and then
     * during long work (it throws ClaimLostException when the lease was
     * lost). When $fn throws, the claim is abandoned (another caller may
     * try at once) and the exception is rethrown. While another caller
     * holds the claim, once() waits with backoff, at most
     * $maxWaitSeconds, then throws ClaimInProgressException.
     *
     * @param callable(callable(): void): mixed $fn
     *
     * @throws ClaimInProgressException
     * @throws ClaimLostException the lease was lost before the result was stored
     * @throws LeaseGateException
     */
    public function once(
        string $scope,
        string $key,
        callable $fn,
        int $ttlSeconds = 30,
        ?int $keepSeconds = null,
        float $maxWaitSeconds = 30.0,
        ?string $owner = null,
    ): mixed {
        $owner ??= self::defaultOwner();
        $deadline = microtime(true) + $maxWaitSeconds;
        $backoffMs = 50;
        while (true) {
            try {
                $r = $this->claim($scope, $key, $owner, $ttlSeconds);
            } catch (ClaimInProgressException $e) {
                $leftMs = (int) (($deadline - microtime(true)) * 1000);
                if ($leftMs <= 0) {
                    throw $e;
                }
                $sleepMs = max(1, min($backoffMs, ($e->retryAfter ?? 1) * 1000, $leftMs));
                usleep(1000 * intdiv($sleepMs, 2) + 1000 * random_int(0, intdiv($sleepMs, 2)));
                $backoffMs = min($backoffMs * 2, 2000);
                continue;
            }
            if ($r->done()) {
                return $r->result;
            }
            $claim = $r->claim;
            if ($claim === null) {
                throw new TransportException('leasegate: a pending claim without its claim');
            }
            $extend = function () use ($scope, $key, $owner, $ttlSeconds, $claim): void {
                try {
                    $again = $this->claim($scope, $key, $owner, $ttlSeconds);
                } catch (ProblemException $e) {
                    throw new ClaimLostException("leasegate: claim $scope/$key lost: " . $e->getMessage(), 0, $e);
                }
                if ($again->done() || $again->claim?->token !== $claim->token) {
                    throw new ClaimLostException("leasegate: claim $scope/$key lost: its lease lapsed");
                }
            };
            try {
                $value = $fn($extend);
            } catch (\Throwable $t) {
                try {
                    $this->abandonClaim($claim);
                } catch (LeaseGateException) {
                    // Expired or taken over already: nothing to abandon.
                }
                throw $t;
            }
            try {
                return $this->completeClaim($claim, $value, $keepSeconds)->result;
            } catch (NotFoundException | ForbiddenException $e) {
                throw new ClaimLostException(
                    "leasegate: claim $scope/$key lost before its result was stored: " . $e->getMessage(),
                    0,
                    $e,
                );
            }
        }
    }

    /** "host:pid:random", unique per call, as the Go client's DefaultOwner. */
    public static function defaultOwner(): string
    {
        return (gethostname() ?: 'unknown') . ':' . getmypid() . ':' . bin2hex(random_bytes(6));
    }

    private static function claimPath(string $scope, string $key): string
    {
        return '/claims/' . self::segment($scope, 'scope') . '/' . self::segment($key, 'key');
    }
}
