<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 409 "limit-mismatch": the semaphore's limit differs from the limit in force while
 * permits are held; the detail names the limit in force.
 */
class LimitMismatchException extends ProblemException
{
}
