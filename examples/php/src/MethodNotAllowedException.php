<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 405 "method-not-allowed": wrong method on a known route.
 */
class MethodNotAllowedException extends ProblemException
{
}
