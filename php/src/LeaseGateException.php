<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * Base of everything the client throws on purpose: catch this to handle
 * any gateway failure. ProblemException (and its subclasses, one per
 * problem slug) is an answer from the gateway; TransportException means no
 * usable answer arrived.
 */
class LeaseGateException extends \RuntimeException
{
}
