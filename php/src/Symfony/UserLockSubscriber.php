<?php

declare(strict_types=1);

namespace LeaseGate\Symfony;

use LeaseGate\UserLockGuard;
use Symfony\Component\EventDispatcher\EventSubscriberInterface;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\HttpKernel\Event\RequestEvent;
use Symfony\Component\HttpKernel\Event\ResponseEvent;
use Symfony\Component\HttpKernel\KernelEvents;

/**
 * The abuse counter (the old Lock class's addUserLock) on Symfony routes:
 *
 *     # config/services.yaml
 *     LeaseGate\UserLockGuard: { arguments: ['@LeaseGate\Client', false] }   # false: fail closed
 *     LeaseGate\Symfony\UserLockSubscriber:
 *         arguments: ['@LeaseGate\UserLockGuard', { app_check_in: { name: receiveDailyTask, ttl: 10 } }]
 *         tags: [kernel.event_subscriber]
 *
 * For a request to one of the routes, one user-lock attempt under the
 * route's lock name; what passes and what gets 429 or 503 is
 * UserLockGuard's rule, and passing responses carry the RateLimit header
 * fields. It runs on kernel.request after the router and the firewall.
 * The user is what $userId returns (e.g. fn ($r) => $security->getUser()
 * ?->getUserIdentifier()), else "ip:" and the client's IP.
 */
final class UserLockSubscriber implements EventSubscriberInterface
{
    private const HEADERS = '_leasegate_user_lock_headers';

    /**
     * @param array<string, array{name: string, ttl?: ?int}> $routes route name => user lock
     * @param ?\Closure(Request): ?string $userId
     */
    public function __construct(
        private readonly UserLockGuard $guard,
        private readonly array $routes,
        private readonly ?\Closure $userId = null,
    ) {
    }

    public static function getSubscribedEvents(): array
    {
        return [
            // After the RouterListener (32) and the firewall (8).
            KernelEvents::REQUEST => ['onKernelRequest', 0],
            KernelEvents::RESPONSE => 'onKernelResponse',
        ];
    }

    public function onKernelRequest(RequestEvent $event): void
    {
        $request = $event->getRequest();
        $lock = $this->routes[(string) $request->attributes->get('_route', '')] ?? null;
        if ($lock === null) {
            return;
        }
        $verdict = $this->guard->check($lock['name'], $this->userOf($request), $lock['ttl'] ?? null);
        if ($verdict->pass) {
            $request->attributes->set(self::HEADERS, $verdict->headers);
            return;
        }
        $event->setResponse(
            new Response(
                $verdict->body(),
                (int) $verdict->status,
                $verdict->headers + ['Content-Type' => 'application/problem+json'],
            ),
        );
    }

    public function onKernelResponse(ResponseEvent $event): void
    {
        $headers = $event->getRequest()->attributes->get(self::HEADERS);
        if (is_array($headers)) {
            foreach ($headers as $field => $value) {
                $event->getResponse()->headers->set($field, $value);
            }
        }
    }

    private function userOf(Request $request): string
    {
        if ($this->userId !== null) {
            $id = ($this->userId)($request);
            if ($id !== null && $id !== '') {
                return $id;
            }
        }
        return 'ip:' . ($request->getClientIp() ?? 'unknown');
    }
}
