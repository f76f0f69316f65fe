<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 429 "abnormal-usage-detected": the user is under an active ban;
 * $retryAfter is the ban's remaining time in seconds. The attempt was not
 * counted as a lock. $rateLimit is the lock's quota from the RateLimit
 * header fields (remaining 0, reset at the ban's end), null without them.
 */
class AbnormalUsageException extends ProblemException
{
    public ?RateLimit $rateLimit = null;
}
