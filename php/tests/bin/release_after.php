<?php

declare(strict_types=1);

// Helper process for the waiting-acquire test: prints "ready", sleeps
// delay_ms, releases the lock, prints "released" (exit 0) or the error
// (exit 1). Usage: php release_after.php URL TRANSPORT RESOURCE OWNER DELAY_MS

require __DIR__ . '/../../autoload.php';

use LeaseGate\Client;
use LeaseGate\Transport\CurlTransport;
use LeaseGate\Transport\StreamTransport;

[, $url, $transport, $resource, $owner, $delayMs] = $argv + array_fill(0, 6, '');
$client = new Client($url, null, $transport === 'curl' ? new CurlTransport() : new StreamTransport());
echo "ready\n";
fflush(STDOUT);
usleep(1000 * (int) $delayMs);
try {
    $client->release($resource, $owner);
} catch (\Throwable $e) {
    echo get_class($e), ': ', $e->getMessage(), "\n";
    exit(1);
}
echo "released\n";
