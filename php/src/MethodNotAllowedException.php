<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 405: wrong method on a known route (slug "malformed-request", like
 * other requests the route cannot take; catch MalformedRequestException
 * for both).
 */
class MethodNotAllowedException extends MalformedRequestException
{
}
