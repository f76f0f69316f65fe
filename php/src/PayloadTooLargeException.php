<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 413 "payload-too-large": the request body is over the gateway's limit.
 */
class PayloadTooLargeException extends ProblemException
{
}
