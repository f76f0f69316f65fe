<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 503 "unavailable": the gateway cannot reach Redis. Nothing was changed and
 * no lock was granted; retry after $retryAfter seconds.
 */
class UnavailableException extends ProblemException
{
}
