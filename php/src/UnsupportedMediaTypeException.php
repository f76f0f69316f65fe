<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 415 "unsupported-media-type": a body without Content-Type:
 * application/json.
 */
class UnsupportedMediaTypeException extends ProblemException
{
}
