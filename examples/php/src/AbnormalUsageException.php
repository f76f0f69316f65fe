<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 429 "abnormal-usage-detected": the user is under an active ban;
 * $retryAfter is the ban's remaining time in seconds. The attempt was not
 * counted as a lock.
 */
class AbnormalUsageException extends ProblemException
{
}
