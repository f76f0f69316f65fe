<?php

declare(strict_types=1);

namespace LeaseGate\Symfony;

use LeaseGate\Client;
use LeaseGate\ForbiddenException;
use LeaseGate\LeaseGateException;
use LeaseGate\NotFoundException;
use LeaseGate\ResourceName;
use Symfony\Component\Lock\BlockingStoreInterface;
use Symfony\Component\Lock\Exception\InvalidArgumentException;
use Symfony\Component\Lock\Exception\InvalidTtlException;
use Symfony\Component\Lock\Exception\LockAcquiringException;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Exception\LockReleasingException;
use Symfony\Component\Lock\Exception\LockStorageException;
use Symfony\Component\Lock\Key;

/**
 * Symfony Lock store on a leasegate gateway (Symfony Lock 5.4 to 7.x):
 *
 *     $factory = new LockFactory(new LeaseGateStore(new \LeaseGate\Client($url)));
 *     $key = new Key('invoice-42');
 *     $lock = $factory->createLockFromKey($key, 30);
 *     if ($lock->acquire()) {
 *         try { $db->write($row, LeaseGateStore::token($key)); }
 *         finally { $lock->release(); }
 *     }
 *
 * Each Key gets its own owner (random, kept in the Key's state, so a
 * serialized Key still releases its lock) and, once saved, the lease's
 * fencing token: LeaseGateStore::token($key). Key names of any bytes are
 * mapped onto the gateway's resource rules by ResourceName::of().
 *
 * Leases are whole seconds: a TTL is rounded up, and the Key's lifetime
 * is reduced by the TTL asked for, measured from before the request, so
 * the Key never outlives its lease. waitAndSave() waits on the gateway
 * (wait_ms: FIFO, woken by the release), never by polling. An expired
 * lease is not silently re-created by putOffExpiration(): that would hand
 * out a new fencing token behind the holder's back.
 *
 * A putOffExpiration() right after this store's own save() with the same
 * whole-second TTL (Lock::acquire() when the lock's TTL is the store's
 * initial TTL) is answered without a request: see putOffExpiration().
 *
 * Gateway failures (UnavailableException when Redis is down,
 * TransportException when the gateway does not answer) reach the caller
 * as the component's LockAcquiringException, LockReleasingException or
 * LockStorageException, with the leasegate exception as previous.
 */
final class LeaseGateStore implements BlockingStoreInterface
{
    /** The longest wait_ms a gateway accepts by default (--max-wait). */
    public const MAX_WAIT_MS = 30_000;

    /**
     * The share of a lease the store does not count on when it answers from
     * what it knows (against the gateway's clock running faster than ours).
     */
    private const CLOCK_MARGIN = 0.001;

    /**
     * Leases this store's last acquire for a Key took, for the
     * putOffExpiration() that follows: owner, token, whole seconds, and
     * the hrtime (ns) before which the lease surely has not ended. Kept in
     * this process only (never in the Key's state, which a serialized Key
     * takes to other clocks) and used once.
     *
     * @var \WeakMap<Key, array{owner: string, token: int, seconds: int, end: int}>
     */
    private readonly \WeakMap $fresh;

    /**
     * @param float $initialTtl seconds of the lease save() takes (Lock::acquire() then
     *                          applies the lock's own TTL with putOffExpiration())
     * @param int $maxWaitMs wait_ms per waiting request (the gateway's max_wait_ms or less);
     *                       waitAndSave() sends as many as it takes
     */
    public function __construct(
        private readonly Client $client,
        private readonly float $initialTtl = 300.0,
        private readonly int $maxWaitMs = self::MAX_WAIT_MS,
    ) {
        if ($initialTtl <= 0) {
            throw new InvalidTtlException(
                sprintf('"%s()" expects a strictly positive TTL, got %s.', __METHOD__, $initialTtl),
            );
        }
        $this->fresh = new \WeakMap();
        if ($maxWaitMs < 1) {
            throw new InvalidArgumentException(
                sprintf('"%s()" expects a positive maxWaitMs, got %d.', __METHOD__, $maxWaitMs),
            );
        }
    }

    /**
     * The fencing token of the lease $key holds (null before it was saved,
     * after delete()). Pass it to the store you write to, which must refuse
     * a token lower than the highest it has seen.
     */
    public static function token(Key $key): ?int
    {
        return self::state($key)['token'] ?? null;
    }

    /** The gateway resource a Key's name maps to (ResourceName::of). */
    public static function resource(Key $key): string
    {
        return ResourceName::of((string) $key);
    }

    public function save(Key $key): void
    {
        $key->reduceLifetime($this->initialTtl);
        if (!$this->acquire($key, $this->initialTtl, 0)) {
            throw new LockConflictedException();
        }
        $this->checkNotExpired($key);
    }

    public function waitAndSave(Key $key): void
    {
        do {
            $start = microtime(true);
            $acquired = $this->acquire($key, $this->initialTtl, $this->maxWaitMs);
        } while (!$acquired);
        // The lease started after $start: the Key ends no later than it.
        $key->reduceLifetime($this->initialTtl - (microtime(true) - $start));
        $this->checkNotExpired($key);
    }

    public function putOffExpiration(Key $key, float $ttl): void
    {
        if ($ttl <= 0) {
            throw new InvalidTtlException(sprintf('"%s()" expects a TTL greater than 0, got %s.', __METHOD__, $ttl));
        }
        $state = self::state($key);
        if ($state === null || $state['token'] === null) {
            throw new LockConflictedException(sprintf('The "%s" lock was not saved by this store.', $key));
        }
        $left = $this->freshLeaseLeft($key, $state, $ttl);
        if ($left !== null) {
            $key->reduceLifetime(min($ttl, $left));
            $this->checkNotExpired($key);
            return;
        }
        $key->reduceLifetime($ttl);
        try {
            $lease = $this->client->renew(self::resource($key), $state['owner'], self::seconds($ttl), $state['token']);
        } catch (NotFoundException | ForbiddenException $e) {
            // Expired (and maybe taken by another owner since): the lease is
            // gone, and a new one would carry a new fencing token.
            throw new LockConflictedException(
                sprintf('The "%s" lock is no longer held: %s', $key, $e->getMessage()),
                0,
                $e,
            );
        } catch (LeaseGateException $e) {
            throw new LockStorageException(
                sprintf('Failed to put off the expiration of the "%s" lock: %s', $key, $e->getMessage()),
                0,
                $e,
            );
        }
        $key->setState(self::class, ['owner' => $state['owner'], 'token' => $lease->token]);
        $this->checkNotExpired($key);
    }

    public function delete(Key $key): void
    {
        unset($this->fresh[$key]);
        $state = self::state($key);
        if ($state === null || $state['token'] === null) {
            return; // never saved: nothing of this Key's to release
        }
        try {
            $this->client->release(self::resource($key), $state['owner'], $state['token']);
        } catch (NotFoundException | ForbiddenException) {
            // Gone already (expired, maybe re-granted): nothing of ours is left.
        } catch (LeaseGateException $e) {
            throw new LockReleasingException(
                sprintf('Failed to release the "%s" lock: %s', $key, $e->getMessage()),
                0,
                $e,
            );
        }
        $key->setState(self::class, ['owner' => $state['owner'], 'token' => null]);
    }

    public function exists(Key $key): bool
    {
        $state = self::state($key);
        if ($state === null || $state['token'] === null) {
            return false;
        }
        try {
            $lease = $this->client->status(self::resource($key));
        } catch (NotFoundException) {
            return false;
        } catch (LeaseGateException $e) {
            throw new LockStorageException(sprintf('Failed to read the "%s" lock: %s', $key, $e->getMessage()), 0, $e);
        }
        return $lease->owner === $state['owner'] && $lease->token === $state['token'];
    }

    /**
     * One acquire for $key, under its owner (made on first use). Returns
     * whether the gateway granted it; keeps the token in the Key.
     */
    private function acquire(Key $key, float $ttl, int $waitMs): bool
    {
        $owner = self::state($key)['owner'] ?? 'symfony:' . bin2hex(random_bytes(16));
        // Kept before the request: a retried save() re-acquires as the same owner.
        $key->setState(self::class, ['owner' => $owner, 'token' => self::token($key)]);
        unset($this->fresh[$key]);
        $seconds = self::seconds($ttl);
        $sent = hrtime(true);
        try {
            $r = $this->client->acquire(self::resource($key), $owner, $seconds, $waitMs);
        } catch (LeaseGateException $e) {
            throw new LockAcquiringException(
                sprintf('Failed to acquire the "%s" lock: %s', $key, $e->getMessage()),
                0,
                $e,
            );
        }
        if (!$r->acquired || $r->lease === null) {
            return false;
        }
        $key->setState(self::class, ['owner' => $owner, 'token' => $r->lease->token]);
        // The gateway's lease began after $sent and lasts what its answer says.
        $leaseMs = (int) $r->lease->expiresAt->format('Uv') - (int) $r->lease->acquiredAt->format('Uv');
        $leaseMs = min($leaseMs, $seconds * 1000);
        $this->fresh[$key] = [
            'owner' => $owner,
            'token' => $r->lease->token,
            'seconds' => $seconds,
            'end' => $sent + (int) ($leaseMs * (1 - self::CLOCK_MARGIN) * 1_000_000),
        ];
        return true;
    }

    /**
     * Seconds left of the lease this store's last acquire for $key took,
     * when that lease is what putOffExpiration($key, $ttl) would ask for:
     * the same owner, token and whole-second TTL, and still at least $ttl
     * minus 1 % of it (at most 1 s) away from its end. Null otherwise: then
     * the gateway is asked. Used once.
     *
     * @param array{owner: string, token: ?int} $state
     */
    private function freshLeaseLeft(Key $key, array $state, float $ttl): ?float
    {
        $fresh = $this->fresh[$key] ?? null;
        unset($this->fresh[$key]);
        if (
            $fresh === null || $fresh['owner'] !== $state['owner'] || $fresh['token'] !== $state['token']
            || $fresh['seconds'] !== self::seconds($ttl)
        ) {
            return null;
        }
        $left = ($fresh['end'] - hrtime(true)) / 1e9;
        return $left >= $ttl - min(1.0, $ttl / 100) ? $left : null;
    }

    /** A TTL in whole seconds of lease, rounded up (the gateway's ttl_seconds). */
    private static function seconds(float $ttl): int
    {
        return max(1, (int) ceil($ttl));
    }

    /** @return ?array{owner: string, token: ?int} */
    private static function state(Key $key): ?array
    {
        if (!$key->hasState(self::class)) {
            return null;
        }
        $state = $key->getState(self::class);
        return is_array($state) && is_string($state['owner'] ?? null) ? $state : null;
    }

    /** As Symfony's ExpiringStoreTrait: an expired Key releases its lease and throws. */
    private function checkNotExpired(Key $key): void
    {
        if (!$key->isExpired()) {
            return;
        }
        try {
            $this->delete($key);
        } catch (\Exception) {
            // the expiry is the error to report
        }
        throw new LockExpiredException(sprintf('Failed to store the "%s" lock.', $key));
    }
}
