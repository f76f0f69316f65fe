<?php

declare(strict_types=1);

namespace LeaseGate\Testing;

/** There is no leasegate binary to start (TestGateway::binary()). */
final class GatewayNotFound extends \RuntimeException
{
}
