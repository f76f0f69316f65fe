<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 500 "internal": an unexpected gateway error.
 */
class InternalException extends ProblemException
{
}
