<?php

declare(strict_types=1);

namespace LeaseGate\Laravel;

use Illuminate\Cache\CacheManager;
use Illuminate\Routing\Router;
use Illuminate\Support\ServiceProvider;
use LeaseGate\Client;
use LeaseGate\Transport\Transport;
use LeaseGate\UserLockGuard;

/**
 * Wires leasegate into a Laravel app (8 to 11; auto-discovered through
 * composer.json's extra.laravel):
 *
 * - a shared LeaseGate\Client from config/leasegate.php;
 * - the "leasegate" cache driver: with 'leasegate' => ['driver' => 'leasegate']
 *   in config/cache.php, Cache::store('leasegate')->lock() takes its locks
 *   on the gateway (the store's own 'prefix' and 'forever_seconds' win
 *   over config/leasegate.php's 'locks');
 * - the route middleware "leasegate.user-lock:NAME[,TTL]" (UserLockMiddleware).
 */
final class LeaseGateServiceProvider extends ServiceProvider
{
    public function register(): void
    {
        $this->mergeConfigFrom(__DIR__ . '/../../config/leasegate.php', 'leasegate');

        $this->app->singleton(Client::class, static function ($app): Client {
            $config = $app['config']['leasegate'] ?? [];
            return new Client(
                $config['url'] ?? null,
                $config['api_key'] ?? null,
                timeout: (float) ($config['timeout'] ?? Client::TIMEOUT),
                connectTimeout: (float) ($config['connect_timeout'] ?? Transport::CONNECT_TIMEOUT),
            );
        });
        $this->app->singleton(LeaseGateLockProvider::class, static function ($app): LeaseGateLockProvider {
            return self::locks($app, []);
        });
        $this->app->singleton(UserLockMiddleware::class, static function ($app): UserLockMiddleware {
            return new UserLockMiddleware(new UserLockGuard(
                $app->make(Client::class),
                (bool) ($app['config']['leasegate.user_locks.fail_open'] ?? false),
            ));
        });
    }

    public function boot(): void
    {
        $this->callAfterResolving('cache', function (CacheManager $cache, $app): void {
            $cache->extend('leasegate', function ($app, array $config) use ($cache) {
                return $cache->repository(new LeaseGateCacheStore(LeaseGateServiceProvider::locks($app, $config)));
            });
        });
        $this->callAfterResolving('router', static function (Router $router): void {
            $router->aliasMiddleware('leasegate.user-lock', UserLockMiddleware::class);
        });
        if (method_exists($this->app, 'configPath')) { // a full Laravel application, not a bare container
            $this->publishes(
                [__DIR__ . '/../../config/leasegate.php' => $this->app->configPath('leasegate.php')],
                'leasegate-config',
            );
        }
    }

    /**
     * @internal the lock provider for a cache store's $config, defaults from config/leasegate.php
     *
     * @param array<string, mixed> $config
     */
    public static function locks($app, array $config): LeaseGateLockProvider
    {
        $defaults = $app['config']['leasegate.locks'] ?? [];
        return new LeaseGateLockProvider(
            $app->make(Client::class),
            (string) ($config['prefix'] ?? $defaults['prefix'] ?? ''),
            (int) ($config['forever_seconds'] ?? $defaults['forever_seconds']
                ?? LeaseGateLockProvider::FOREVER_SECONDS),
        );
    }
}
