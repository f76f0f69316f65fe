<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 429 "rate-limited": too many requests; wait $retryAfter seconds.
 */
class RateLimitedException extends ProblemException
{
}
