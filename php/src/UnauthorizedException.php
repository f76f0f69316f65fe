<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 401 "unauthorized": missing, malformed or unknown API key.
 */
class UnauthorizedException extends ProblemException
{
}
