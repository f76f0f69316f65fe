<?php

declare(strict_types=1);

// Cost of a lock cycle (acquire + release) through the Symfony store
// against the plain client, side by side in one run against one gateway.
//
//   php bench/store_bench.php [--url=URL] [--cycles=200] [--rounds=7] [--offline]
//
// --offline answers every request in-process (no gateway, no network), so
// the figures are the PHP code's own cost per cycle: what the store adds
// on top of the client, without the round trips that dominate online.
//
// Each round runs --cycles cycles of each way (client, store, Symfony
// Lock), interleaved, on fresh resource names; the report gives the
// median microseconds per cycle over all rounds and the store/client ratio.
// Needs a gateway (default $LEASEGATE_URL) and Symfony Lock (Debian's
// php-symfony-lock or Composer's vendor/). Numbers: docs/benchmarks.md.

require __DIR__ . '/../tests/bootstrap.php';

use LeaseGate\Client;
use LeaseGate\Symfony\LeaseGateStore;
use Symfony\Component\Lock\Key;
use LeaseGate\Transport\Response;
use LeaseGate\Transport\Transport;
use Symfony\Component\Lock\LockFactory;

/** Answers acquire, release and renew at once, as a gateway with a free lock would. */
final class InstantGateway implements Transport
{
    private int $token = 0;

    public function send(
        string $method,
        string $url,
        array $headers,
        ?string $body,
        float $timeout,
        float $connectTimeout = Transport::CONNECT_TIMEOUT,
        ?string $unixSocket = null,
    ): Response {
        if ($method === 'DELETE') {
            return new Response(204, [], '');
        }
        $req = json_decode((string) $body, true);
        $resource = rawurldecode((string) preg_replace('#^.*/locks/([^/?]*).*$#', '$1', $url));
        $now = gmdate('Y-m-d\TH:i:s') . '.000Z';
        $lock = ['resource' => $resource, 'owner' => $req['owner'] ?? 'o', 'token' => ++$this->token, 'acquired_at' => $now, 'expires_at' => $now];
        return new Response(200, ['content-type' => 'application/json'], (string) json_encode(['acquired' => true, 'lock' => $lock]));
    }
}

$opts = getopt('', ['url:', 'cycles:', 'rounds:', 'offline']);
$offline = isset($opts['offline']);
$url = $offline ? 'http://offline.invalid' : (string) ($opts['url'] ?? getenv('LEASEGATE_URL') ?: Client::DEFAULT_URL);
$cycles = max(1, (int) ($opts['cycles'] ?? 200));
$rounds = max(1, (int) ($opts['rounds'] ?? 7));

$client = new Client($url, null, $offline ? new InstantGateway() : null);
$store = new LeaseGateStore($client);
$factory = new LockFactory($store);
$run = bin2hex(random_bytes(4));
$owner = 'bench-' . $run;

$ways = [
    'client' => static function (string $resource) use ($client, $owner): void {
        $r = $client->acquire($resource, $owner, 300);
        if (!$r->acquired || $r->lease === null) {
            throw new RuntimeException("client: $resource not acquired");
        }
        $client->release($resource, $owner, $r->lease->token);
    },
    'store' => static function (string $resource) use ($store): void {
        $key = new Key($resource);
        $store->save($key);
        $store->delete($key);
    },
    // Symfony's Lock with no TTL of its own (a TTL other than the store's initial TTL adds a renew).
    'lock' => static function (string $resource) use ($factory): void {
        $lock = $factory->createLock($resource, null);
        if (!$lock->acquire()) {
            throw new RuntimeException("lock: $resource not acquired");
        }
        $lock->release();
    },
];

// Warm up connections, opcache and the gateway's scripts.
foreach ($ways as $way => $cycle) {
    for ($i = 0; $i < 20; $i++) {
        $cycle("bench-$run-warm-$way-$i");
    }
}

// Cycles of the three ways interleave (in turn, the order rotating), each
// timed on its own: a load spike on the machine hits all three alike, and
// the median per cycle ignores it.
$samples = array_fill_keys(array_keys($ways), []);
$names = array_keys($ways);
for ($round = 0; $round < $rounds; $round++) {
    $perRound = array_fill_keys($names, []);
    for ($i = 0; $i < $cycles; $i++) {
        for ($j = 0; $j < count($names); $j++) {
            $way = $names[($i + $j) % count($names)];
            $start = hrtime(true);
            $ways[$way]("bench-$run-$round-$way-$i");
            $perRound[$way][] = (hrtime(true) - $start) / 1e3;
        }
    }
    foreach ($perRound as $way => $xs) {
        $samples[$way] = array_merge($samples[$way], $xs);
    }
}

$median = static function (array $xs): float {
    sort($xs);
    $n = count($xs);
    return $n % 2 === 1 ? $xs[intdiv($n, 2)] : ($xs[$n / 2 - 1] + $xs[$n / 2]) / 2;
};
printf("PHP %s, %s, %d rounds x %d cycles\n", PHP_VERSION, $offline ? 'offline (in-process answers)' : sprintf('%s transport, gateway %s', extension_loaded('curl') ? 'curl' : 'stream', $url), $rounds, $cycles);
printf("%-8s %12s %12s %12s\n", 'way', 'median µs', 'p10 µs', 'p90 µs');
$pct = static function (array $xs, float $p): float {
    sort($xs);
    return $xs[(int) floor($p * (count($xs) - 1))];
};
foreach ($samples as $way => $xs) {
    printf("%-8s %12.1f %12.1f %12.1f\n", $way, $median($xs), $pct($xs, 0.1), $pct($xs, 0.9));
}
printf("ratio store/client %.3f\n", $median($samples['store']) / $median($samples['client']));
printf("ratio lock/client %.3f\n", $median($samples['lock']) / $median($samples['client']));
