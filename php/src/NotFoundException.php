<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 404 "not-found": no live lock (none, expired, or released), no user lock
 * to clear, or no such route.
 */
class NotFoundException extends ProblemException
{
}
