<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 400 "malformed-request": the body was not a single JSON object.
 */
class MalformedRequestException extends ProblemException
{
}
