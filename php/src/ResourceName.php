<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * Maps a name of any bytes (a Symfony Lock key, a Laravel lock name) onto
 * the gateway's resource rules (1..255 bytes of valid UTF-8 without
 * control characters), injectively:
 *
 * - a name that already keeps those rules and does not start with
 *   "sha256:" is used as it is, so `invoice-42` is the same lock for the
 *   framework and for Client::acquire('invoice-42', ...);
 * - every other name (empty, too long, not UTF-8, with a control
 *   character, or starting with "sha256:") becomes "sha256:" followed by
 *   the 64 hex digits of its SHA-256.
 *
 * The two sets of results cannot meet (only hashed names start with
 * "sha256:"), and two different hashed names meet only on a SHA-256
 * collision, so distinct names are distinct locks.
 */
final class ResourceName
{
    public const HASHED_PREFIX = 'sha256:';

    public static function of(string $name): string
    {
        return self::valid($name) && !str_starts_with($name, self::HASHED_PREFIX)
            ? $name
            : self::HASHED_PREFIX . hash('sha256', $name);
    }

    /** Whether $name keeps the gateway's resource rules as it is. */
    public static function valid(string $name): bool
    {
        // Control characters as Go's unicode.IsControl, which the gateway
        // uses: C0, DEL and C1.
        return $name !== ''
            && strlen($name) <= 255
            && preg_match('//u', $name) === 1
            && preg_match('/[\x{0}-\x{1f}\x{7f}-\x{9f}]/u', $name) === 0;
    }
}
