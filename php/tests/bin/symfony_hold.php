<?php

declare(strict_types=1);

// Helper process for the Symfony store's blocking test: saves the Key
// named KEY through its own LeaseGateStore, prints "held TOKEN", waits for
// a line on stdin, sleeps DELAY_MS, deletes the Key and prints "released".
// Usage: php symfony_hold.php URL KEY DELAY_MS

require __DIR__ . '/../bootstrap.php';

use LeaseGate\Client;
use LeaseGate\Symfony\LeaseGateStore;
use Symfony\Component\Lock\Key;

[, $url, $name, $delayMs] = $argv + array_fill(0, 4, '');
try {
    $store = new LeaseGateStore(new Client($url));
    $key = new Key($name);
    $store->save($key);
    echo 'held ', LeaseGateStore::token($key), "\n";
    fgets(STDIN);
    usleep(1000 * (int) $delayMs);
    $store->delete($key);
} catch (\Throwable $e) {
    echo get_class($e), ': ', $e->getMessage(), "\n";
    exit(1);
}
echo "released\n";
