<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * once(): the claim's lease was lost while the work ran (it took longer
 * than the lease and was not extended), so its result was not stored and
 * another caller may run the work too.
 */
class ClaimLostException extends LeaseGateException
{
}
