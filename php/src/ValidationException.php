<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 422 "validation": the request has invalid fields; $fieldErrors (or
 * errorsFor()) names them.
 */
class ValidationException extends ProblemException
{
}
