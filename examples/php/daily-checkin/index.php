<?php

declare(strict_types=1);

// A daily check-in endpoint built on once(): however often a user taps
// "check in" today, on however many web servers, and whatever the retries
// after timeouts, the reward is granted once and every answer shows the
// same reward.
//
//   php -S 127.0.0.1:8000 -t examples/php/daily-checkin
//   curl -X POST -H 'X-User-Id: 42' http://127.0.0.1:8000/
//
// LEASEGATE_URL / LEASEGATE_API_KEY configure the gateway (a client key).

require __DIR__ . '/../../../php/autoload.php';

use LeaseGate\Client;
use LeaseGate\ClaimInProgressException;
use LeaseGate\ClaimLostException;
use LeaseGate\LeaseGateException;

/** Your reward logic: it writes to your database and must not run twice. */
function grant_daily_reward(string $userId, string $day): array
{
    $coins = 10 + (crc32($userId . $day) % 5);
    // e.g. INSERT INTO rewards (user_id, day, coins) ... ; UPDATE wallets ...
    return ['user_id' => $userId, 'day' => $day, 'coins' => $coins, 'granted_at' => gmdate('c')];
}

function answer(int $status, array $body, array $headers = []): void
{
    http_response_code($status);
    header('Content-Type: application/json');
    foreach ($headers as $name => $value) {
        header("$name: $value");
    }
    echo json_encode($body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE), "\n";
}

if (($_SERVER['REQUEST_METHOD'] ?? 'GET') !== 'POST') {
    answer(405, ['error' => 'POST to check in'], ['Allow' => 'POST']);
    return;
}
// Your authentication decides the user; a header stands in for it here.
$userId = (string) ($_SERVER['HTTP_X_USER_ID'] ?? '');
if ($userId === '' || preg_match('/^[A-Za-z0-9_-]{1,64}$/', $userId) !== 1) {
    answer(400, ['error' => 'X-User-Id is required']);
    return;
}
$day = gmdate('Y-m-d'); // the check-in day, in UTC

$client = Client::fromEnvironment();
try {
    // Scope "daily-checkin", key "user-42:2026-12-01": one piece of work
    // per user and day. The result is kept 2 days, longer than the day.
    $reward = $client->once(
        'daily-checkin',
        "user-$userId:$day",
        fn () => grant_daily_reward($userId, $day),
        ttlSeconds: 30,
        keepSeconds: 2 * 86400,
        maxWaitSeconds: 5.0,
    );
    answer(200, ['checked_in' => true, 'reward' => $reward]);
} catch (ClaimInProgressException $e) {
    // Another request for this user is granting the reward right now.
    answer(409, ['error' => 'check-in in progress, retry shortly'], ['Retry-After' => (string) ($e->retryAfter ?? 1)]);
} catch (ClaimLostException $e) {
    // The work ran but took longer than its lease: log it and check.
    error_log($e->getMessage());
    answer(500, ['error' => 'check-in could not be confirmed']);
} catch (LeaseGateException $e) {
    // The gateway or Redis is down: nothing was granted.
    error_log($e->getMessage());
    answer(503, ['error' => 'check-in is unavailable, retry later'], ['Retry-After' => '1']);
}
