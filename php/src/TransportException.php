<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * The gateway could not be reached, timed out, or answered something that
 * is not the documented JSON. Nothing is known about the lock's state:
 * treat it as "not acquired" and retry later.
 */
class TransportException extends LeaseGateException
{
    /**
     * For a Transport: a request that got no HTTP answer, as "leasegate:
     * METHOD URL: what went wrong". Any user:password@ is dropped from the
     * URL first: credentials never go into a message.
     */
    public static function request(string $method, string $url, string $what): self
    {
        return new self(
            sprintf('leasegate: %s %s: %s', $method, (string) preg_replace('#//[^/@]*@#', '//', $url), $what),
        );
    }
}
