<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 409 "claim-in-progress": another owner is doing this claim's work right now;
 * $retryAfter is how long its lease has left.
 */
class ClaimInProgressException extends ProblemException
{
}
