<?php

declare(strict_types=1);

namespace LeaseGate\Laravel;

use Illuminate\Cache\NullStore;

/**
 * The "leasegate" cache store: it provides locks (Cache::store('leasegate')
 * ->lock(...)) and caches nothing (get() is always null, put() stores
 * nothing), so no cache value ever depends on the lock gateway.
 */
final class LeaseGateCacheStore extends NullStore
{
    public function __construct(private readonly LeaseGateLockProvider $locks)
    {
    }

    public function lock($name, $seconds = 0, $owner = null)
    {
        return $this->locks->lock($name, $seconds, $owner);
    }

    public function restoreLock($name, $owner)
    {
        return $this->locks->restoreLock($name, $owner);
    }
}
