<?php

declare(strict_types=1);

namespace LeaseGate\Laravel;

use Illuminate\Contracts\Cache\LockProvider;
use LeaseGate\Client;
use LeaseGate\ResourceName;

/**
 * Laravel's LockProvider on a leasegate gateway:
 *
 *     $locks = new LeaseGateLockProvider(new \LeaseGate\Client($url));
 *     $locks->lock('invoice-42', 30)->get(fn () => ...);
 *
 * The gateway resource of a lock is ResourceName::of($prefix . $name):
 * names that keep the gateway's rules are used as they are, others
 * become sha256:<hex>. In a Laravel app the leasegate cache store
 * (LeaseGateServiceProvider) makes it Cache::store('leasegate')->lock().
 */
final class LeaseGateLockProvider implements LockProvider
{
    /** Lease of a lock asked for with $seconds = 0: the gateway's default max_ttl. */
    public const FOREVER_SECONDS = 86_400;

    /** The longest wait_ms a gateway accepts by default: block() sends as many as it takes. */
    public const MAX_WAIT_MS = 30_000;

    public function __construct(
        private readonly Client $client,
        private readonly string $prefix = '',
        private readonly int $foreverSeconds = self::FOREVER_SECONDS,
        private readonly int $maxWaitMs = self::MAX_WAIT_MS,
    ) {
        if ($foreverSeconds < 1 || $maxWaitMs < 1) {
            throw new \InvalidArgumentException('leasegate: foreverSeconds and maxWaitMs must be positive');
        }
    }

    /**
     * @param string $name
     * @param int $seconds lease in seconds; 0: $foreverSeconds (until released, within a bound)
     * @param ?string $owner null: a random one (Laravel's default)
     */
    public function lock($name, $seconds = 0, $owner = null): LeaseGateLock
    {
        return new LeaseGateLock(
            $this->client,
            ResourceName::of($this->prefix . $name),
            (string) $name,
            (int) $seconds,
            $owner === null ? null : (string) $owner,
            $this->foreverSeconds,
            $this->maxWaitMs,
        );
    }

    /** The lock $owner holds (or held) on $name, e.g. in a queued job. */
    public function restoreLock($name, $owner): LeaseGateLock
    {
        return $this->lock($name, 0, $owner);
    }
}
