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
}
