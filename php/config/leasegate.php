<?php

// Configuration of leasegate in a Laravel app (LeaseGate\Laravel\LeaseGateServiceProvider).
// Publish it with: php artisan vendor:publish --tag=leasegate-config
// The cache store is one more entry in config/cache.php:
//     'stores' => [ ..., 'leasegate' => ['driver' => 'leasegate'] ],
// and then Cache::store('leasegate')->lock('invoice-42', 30)->get(fn () => ...).

return [
    // The gateway and the client API key (null: LEASEGATE_URL / LEASEGATE_API_KEY).
    // The URL is http://host:port, https://..., or unix:/path/to/leasegate.sock.
    'url' => env('LEASEGATE_URL'),
    'api_key' => env('LEASEGATE_API_KEY'),
    // Seconds per request, connecting included, on top of any wait; and
    // seconds to wait for the connection. A gateway that does not answer
    // holds a PHP-FPM worker this long, not longer.
    'timeout' => 3.0,
    'connect_timeout' => 1.0,

    'locks' => [
        // Put before every lock name (e.g. the app's name).
        'prefix' => '',
        // Lease of Cache::lock($name) without seconds (Laravel's "until released").
        'forever_seconds' => 86400,
    ],

    'user_locks' => [
        // The leasegate.user-lock route middleware when the gateway cannot
        // answer: true lets the request through, false answers 503.
        'fail_open' => false,
    ],
];
