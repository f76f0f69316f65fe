<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Symfony;

use LeaseGate\Symfony\UserLockSubscriber;
use LeaseGate\Tests\Support\Frameworks;
use LeaseGate\Tests\Support\UserLockRouteCases;
use LeaseGate\UserLockGuard;
use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\HttpKernel\Event\RequestEvent;
use Symfony\Component\HttpKernel\Event\ResponseEvent;
use Symfony\Component\HttpKernel\HttpKernelInterface;
use Symfony\Component\HttpKernel\KernelEvents;

/** The user-lock event subscriber, dispatched as the HttpKernel does. */
final class UserLockSubscriberTest extends UserLockRouteCases
{
    protected function setUp(): void
    {
        Frameworks::require(RequestEvent::class, 'php-symfony-http-kernel');
    }

    protected function send(UserLockGuard $guard, string $lockName, int $ttl, ?string $user): array
    {
        $dispatcher = new EventDispatcher();
        $dispatcher->addSubscriber(new UserLockSubscriber(
            $guard,
            ['app_check_in' => ['name' => $lockName, 'ttl' => $ttl]],
            $user === null ? null : fn (Request $r): ?string => $user,
        ));
        $kernel = new class () implements HttpKernelInterface {
            public function handle(Request $request, int $type = self::MAIN_REQUEST, bool $catch = true): Response
            {
                return new Response();
            }
        };
        $request = Request::create('/check-in', 'POST');
        $request->attributes->set('_route', 'app_check_in');
        $event = new RequestEvent($kernel, $request, HttpKernelInterface::MAIN_REQUEST);
        $dispatcher->dispatch($event, KernelEvents::REQUEST);
        $handled = !$event->hasResponse();
        $response = $event->hasResponse() ? $event->getResponse() : new Response('checked in');
        $dispatcher->dispatch(new ResponseEvent($kernel, $request, HttpKernelInterface::MAIN_REQUEST, $response), KernelEvents::RESPONSE);
        $headers = [];
        foreach ($response->headers->all() as $name => $values) {
            $headers[strtolower($name)] = $values[0] ?? null;
        }
        return ['status' => $response->getStatusCode(), 'headers' => $headers, 'body' => (string) $response->getContent(), 'handled' => $handled];
    }

    public function testOtherRoutesAreNotCounted(): void
    {
        $dispatcher = new EventDispatcher();
        $dispatcher->addSubscriber(new UserLockSubscriber(new UserLockGuard(new \LeaseGate\Client('http://127.0.0.1:1')), ['app_check_in' => ['name' => 'php.x']]));
        $kernel = $this->createMock(HttpKernelInterface::class);
        $request = Request::create('/home');
        $request->attributes->set('_route', 'app_home');
        $event = new RequestEvent($kernel, $request, HttpKernelInterface::MAIN_REQUEST);
        $dispatcher->dispatch($event, KernelEvents::REQUEST); // would fail closed if it called the (dead) gateway
        self::eq($event->hasResponse(), false, 'a route without a user lock passes untouched');
    }
}
