<?php

declare(strict_types=1);

// Latency of one lock cycle as PHP-FPM runs it: every cycle builds its
// client (and store, and Redis connection) afresh, takes a lock and
// releases it. The ways run alternately, one cycle each in turn, so
// that a noisy machine slows them alike.
//
//   php bench/cycle_bench.php --url=http://127.0.0.1:8080 [--unix=/path/leasegate.sock]
//       [--redis=127.0.0.1:6380] [--cycles=2000] [--transport=curl|stream]
//
// Ways: "client tcp" (Client::acquire + release), "client unix" (the same
// over the Unix socket, with --unix), "symfony tcp" / "symfony unix"
// (Symfony Lock on LeaseGateStore, lock TTL = the store's initial TTL),
// "symfony redis" (Symfony Lock on Symfony's RedisStore over phpredis, with
// --redis). Prints p50 and p99 in ms per way and the ratios the docs quote.
// Numbers: docs/benchmarks.md.

require __DIR__ . '/../tests/bootstrap.php';

use LeaseGate\Client;
use LeaseGate\Symfony\LeaseGateStore;
use LeaseGate\Transport\CurlTransport;
use LeaseGate\Transport\StreamTransport;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

$opts = getopt('', ['url:', 'unix:', 'redis:', 'cycles:', 'transport:']);
$url = (string) ($opts['url'] ?? getenv('LEASEGATE_URL') ?: Client::DEFAULT_URL);
$cycles = max(1, (int) ($opts['cycles'] ?? 2000));
$transport = match ($opts['transport'] ?? null) {
    'curl' => static fn () => new CurlTransport(),
    'stream' => static fn () => new StreamTransport(),
    default => static fn () => null,
};
$run = bin2hex(random_bytes(4));
$ttl = 300;

$client = static fn (string $base): Client => new Client($base, null, $transport());
$plain = static function (string $base) use ($client, $ttl): Closure {
    return static function (string $resource) use ($base, $client, $ttl): void {
        $c = $client($base);
        $r = $c->acquire($resource, 'bench', $ttl);
        if (!$r->acquired || $r->lease === null) {
            throw new RuntimeException("$resource not acquired");
        }
        $c->release($resource, 'bench', $r->lease->token);
    };
};
$symfony = static function (Closure $store) use ($ttl): Closure {
    return static function (string $resource) use ($store, $ttl): void {
        $lock = (new LockFactory($store()))->createLock($resource, $ttl);
        if (!$lock->acquire()) {
            throw new RuntimeException("$resource not acquired");
        }
        $lock->release();
    };
};

$ways = ['client tcp' => $plain($url)];
if (isset($opts['unix'])) {
    $ways['client unix'] = $plain('unix:' . $opts['unix']);
}
$ways['symfony tcp'] = $symfony(static fn () => new LeaseGateStore($client($url), $ttl));
if (isset($opts['unix'])) {
    $ways['symfony unix'] = $symfony(static fn () => new LeaseGateStore($client('unix:' . $opts['unix']), $ttl));
}
if (isset($opts['redis']) && !class_exists(Redis::class)) {
    fwrite(STDERR, "--redis needs phpredis (apt-get install php-redis)\n");
    exit(2);
}
if (isset($opts['redis'])) {
    [$host, $port] = explode(':', (string) $opts['redis']) + [1 => '6379'];
    $ways['symfony redis'] = $symfony(static function () use ($host, $port): RedisStore {
        $redis = new Redis();
        $redis->connect($host, (int) $port, 1.0);
        return new RedisStore($redis);
    });
}

$ms = array_fill_keys(array_keys($ways), []);
for ($i = 0; $i < $cycles; $i++) {
    foreach ($ways as $name => $cycle) {
        $resource = sprintf('bench-%s-%s-%d', $run, str_replace(' ', '-', $name), $i);
        $start = hrtime(true);
        $cycle($resource);
        $ms[$name][] = (hrtime(true) - $start) / 1e6;
    }
}

$pct = static function (array $xs, float $p): float {
    sort($xs);
    return $xs[(int) min(count($xs) - 1, floor($p * count($xs)))];
};
printf("%d cycles per way, alternating, fresh client per cycle\n", $cycles);
printf("%-14s %8s %8s\n", 'way', 'p50 ms', 'p99 ms');
$p50 = [];
foreach ($ms as $name => $xs) {
    $p50[$name] = $pct($xs, 0.5);
    printf("%-14s %8.3f %8.3f\n", $name, $p50[$name], $pct($xs, 0.99));
}
foreach ([['client unix', 'client tcp'], ['symfony tcp', 'symfony redis'], ['symfony unix', 'symfony redis']] as [$a, $b]) {
    if (isset($p50[$a], $p50[$b])) {
        printf("ratio p50 %s / %s %.2f\n", $a, $b, $p50[$a] / $p50[$b]);
    }
}
