<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * Drop-in replacement for the old Redis-backed Lock class:
 *
 *     $lock = new Lock($mid, 'receiveDailyTask');
 *     if (!$lock->addUserLock()) {        // 10 s window, as before
 *         return 'too fast';
 *     }
 *     ...
 *     $lock->clearUserLock();
 *
 * addUserLock() is true only for the first attempt in the window (the
 * user lock is now held), false for every repeat while the window lasts;
 * attempts() and flagged() expose the counter the gateway keeps. Repeat
 * attempts are counted and flagged by the gateway ("brush user" logging
 * and bans live there now), and counter and expiry are set atomically, so
 * a crash can no longer leave a key without a TTL.
 *
 * A banned user gets false (with banned() and retryAfter()), like any
 * other refused attempt. Every other failure throws a LeaseGateException:
 * when the gateway or Redis is down nothing was granted, and the old
 * class threw too (RedisException).
 */
final class Lock
{
    private static ?Client $defaultClient = null;

    private readonly string $mid;
    private ?UserLockResult $last = null;
    private ?AbnormalUsageException $ban = null;

    /**
     * @param int|string $mid the user (member) id
     * @param string $name the lock name, 1..64 of [A-Za-z0-9._-]
     * @param ?Client $client null: the one set with useClient(), else one from the environment
     */
    public function __construct(
        int|string $mid,
        private readonly string $name,
        private ?Client $client = null,
    ) {
        $this->mid = (string) $mid;
    }

    /** Sets the client every Lock without an explicit one uses (null: from the environment again). */
    public static function useClient(?Client $client): void
    {
        self::$defaultClient = $client;
    }

    /**
     * One attempt: true when it opened the window (the lock is acquired),
     * false when the user already holds it, or is banned.
     *
     * @param int $time window in seconds (the lock's TTL from the first attempt)
     *
     * @throws LeaseGateException gateway or Redis unavailable, bad name or id
     */
    public function addUserLock(int $time = 10): bool
    {
        $this->ban = null;
        try {
            $this->last = $this->client()->addUserLock($this->name, $this->mid, $time);
        } catch (AbnormalUsageException $e) {
            $this->last = null;
            $this->ban = $e;
            return false;
        }
        return $this->last->acquired;
    }

    /**
     * Releases the user lock (clears the counter): true when there was
     * one, false when there was nothing to clear (like DEL's 1 and 0).
     *
     * @throws LeaseGateException
     */
    public function clearUserLock(): bool
    {
        try {
            $this->client()->clearUserLock($this->name, $this->mid);
        } catch (NotFoundException) {
            return false;
        }
        $this->last = null;
        return true;
    }

    /** Attempts in the current window as of the last addUserLock() (0 before any). */
    public function attempts(): int
    {
        return $this->last?->attempts ?? 0;
    }

    /** Whether the last addUserLock() reported the user as flagged. */
    public function flagged(): bool
    {
        return $this->last?->flagged ?? false;
    }

    /** Whether the last addUserLock() was refused because the user is banned. */
    public function banned(): bool
    {
        return $this->ban !== null;
    }

    /** Seconds left on the ban after a banned attempt, else null. */
    public function retryAfter(): ?int
    {
        return $this->ban?->retryAfter;
    }

    /** The full answer of the last addUserLock() (null before, or when banned). */
    public function lastResult(): ?UserLockResult
    {
        return $this->last;
    }

    private function client(): Client
    {
        return $this->client ??= self::$defaultClient ?? Client::fromEnvironment();
    }
}
