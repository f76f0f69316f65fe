<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Laravel;

use Illuminate\Auth\GenericUser;
use Illuminate\Config\Repository as Config;
use Illuminate\Container\Container;
use Illuminate\Events\Dispatcher;
use Illuminate\Http\Request;
use Illuminate\Routing\Router;
use LeaseGate\Client;
use LeaseGate\Laravel\LeaseGateServiceProvider;
use LeaseGate\Laravel\UserLockMiddleware;
use LeaseGate\Tests\Support\Frameworks;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\UserLockRouteCases;
use LeaseGate\UserLockGuard;
use Symfony\Component\HttpFoundation\Response;

/** The leasegate.user-lock route middleware. */
final class UserLockMiddlewareTest extends UserLockRouteCases
{
    protected function setUp(): void
    {
        Frameworks::require(Request::class, 'php-laravel-framework');
    }

    protected function send(UserLockGuard $guard, string $lockName, int $ttl, ?string $user): array
    {
        $request = Request::create('/check-in', 'POST');
        $request->setUserResolver(fn () => $user === null ? null : new GenericUser(['id' => $user]));
        $handled = false;
        $response = (new UserLockMiddleware($guard))->handle($request, function () use (&$handled): Response {
            $handled = true;
            return new Response('checked in');
        }, $lockName, (string) $ttl);
        self::assertInstanceOf(Response::class, $response);
        $headers = [];
        foreach ($response->headers->all() as $name => $values) {
            $headers[strtolower($name)] = $values[0] ?? null;
        }
        return ['status' => $response->getStatusCode(), 'headers' => $headers, 'body' => (string) $response->getContent(), 'handled' => $handled];
    }

    public function testTheServiceProviderRegistersTheMiddleware(): void
    {
        $app = new Container();
        $app->instance('config', new Config(['leasegate' => ['url' => Gateway::deadUrl(), 'timeout' => 2.0, 'user_locks' => ['fail_open' => true]]]));
        $app->instance('router', new Router(new Dispatcher($app), $app));
        $provider = new LeaseGateServiceProvider($app);
        $provider->register();
        $provider->boot();
        self::eq($app->make('router')->getMiddleware()['leasegate.user-lock'] ?? null, UserLockMiddleware::class, 'the route middleware alias');
        self::eq($app->make(Client::class)->baseUrl(), Gateway::deadUrl(), 'the client from config/leasegate.php');

        // fail_open from the config: the dead gateway lets the request through.
        $handled = false;
        $app->make(UserLockMiddleware::class)->handle(Request::create('/'), function () use (&$handled): Response {
            $handled = true;
            return new Response();
        }, 'php.check-in');
        self::eq($handled, true, 'user_locks.fail_open = true lets the request through');
    }
}
