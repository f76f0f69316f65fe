<?php

declare(strict_types=1);

namespace LeaseGate\Laravel;

use Illuminate\Cache\Lock;
use Illuminate\Contracts\Cache\LockTimeoutException;
use LeaseGate\Client;
use LeaseGate\ForbiddenException;
use LeaseGate\Lease;
use LeaseGate\NotFoundException;

/**
 * A Laravel lock held on a leasegate gateway (Illuminate\Cache\Lock):
 * get() with or without a callback, block() waiting on the gateway
 * (wait_ms, FIFO, woken by the release) instead of the base class's
 * polling, release() for the owner only, forceRelease(), owner().
 *
 * $seconds = 0 ("until released" in Laravel) takes a lease of the
 * provider's $foreverSeconds (default 86400, the gateway's default
 * max_ttl): a crashed holder does not lock the name for good.
 *
 * token() is the fencing token of the lease this lock took (null before
 * it acquired, and for a lock restored with restoreLock() until it
 * acquires again). Gateway failures are thrown as they come
 * (UnavailableException, TransportException): nothing was acquired and
 * no callback ran.
 */
class LeaseGateLock extends Lock
{
    private ?Lease $lease = null;

    public function __construct(
        private readonly Client $client,
        private readonly string $resource,
        string $name,
        int $seconds,
        ?string $owner,
        private readonly int $foreverSeconds,
        private readonly int $maxWaitMs,
    ) {
        parent::__construct($name, $seconds, $owner);
    }

    public function acquire()
    {
        return $this->attempt(0);
    }

    /**
     * Waits up to $seconds on the gateway for the lock, then runs
     * $callback (releasing afterwards) or returns true.
     *
     * @throws LockTimeoutException when $seconds passed without the lock
     */
    public function block($seconds, $callback = null)
    {
        $deadline = microtime(true) + max(0, $seconds);
        while (!$this->attempt(min($this->maxWaitMs, (int) max(0, round(($deadline - microtime(true)) * 1000))))) {
            if (microtime(true) >= $deadline) {
                throw new LockTimeoutException();
            }
        }
        if (is_callable($callback)) {
            try {
                return $callback();
            } finally {
                $this->release();
            }
        }
        return true;
    }

    /** Releases the lock if this owner holds it: true, else false. */
    public function release()
    {
        try {
            $this->client->release($this->resource, $this->owner);
        } catch (NotFoundException | ForbiddenException) {
            return false;
        }
        $this->lease = null;
        return true;
    }

    /**
     * Releases the lock whoever holds it. Works with a client key: it
     * reads the current lease and releases exactly that one (owner and
     * token), so a lease granted in between is never released by mistake.
     */
    public function forceRelease()
    {
        for ($i = 0; $i < 5; $i++) {
            try {
                $lease = $this->client->status($this->resource);
                $this->client->release($this->resource, $lease->owner, $lease->token);
                break;
            } catch (NotFoundException) {
                break; // nothing held
            } catch (ForbiddenException) {
                // another owner took it between status and release: again
            }
        }
        $this->lease = null;
    }

    /** The fencing token of the lease this lock holds, or null. */
    public function token(): ?int
    {
        return $this->lease?->token;
    }

    /** The lease this lock took with its last acquire, or null. */
    public function lease(): ?Lease
    {
        return $this->lease;
    }

    /** The gateway resource this lock's name maps to (ResourceName::of). */
    public function resource(): string
    {
        return $this->resource;
    }

    protected function getCurrentOwner()
    {
        try {
            return $this->client->status($this->resource)->owner;
        } catch (NotFoundException) {
            return null;
        }
    }

    private function attempt(int $waitMs): bool
    {
        $seconds = (int) $this->seconds > 0 ? (int) $this->seconds : $this->foreverSeconds;
        $r = $this->client->acquire($this->resource, $this->owner, $seconds, $waitMs);
        $this->lease = $r->lease;
        return $r->acquired;
    }
}
