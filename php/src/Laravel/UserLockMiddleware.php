<?php

declare(strict_types=1);

namespace LeaseGate\Laravel;

use Illuminate\Http\Request;
use LeaseGate\UserLockGuard;
use Symfony\Component\HttpFoundation\Response;

/**
 * Route middleware for the abuse counter (the old Lock class's
 * addUserLock on a route):
 *
 *     Route::post('/check-in', CheckIn::class)->middleware('leasegate.user-lock:receiveDailyTask,10');
 *
 * One user-lock attempt per request under the lock NAME (window TTL
 * seconds, default the gateway's 10). The user is the authenticated
 * user's id, else "ip:" and the client's IP (as Laravel's own throttle).
 * What passes and what gets 429 or 503 is UserLockGuard's rule; passing
 * responses carry the RateLimit header fields.
 */
final class UserLockMiddleware
{
    /** @param ?\Closure(Request): ?string $userId who the request is for; null: the default above */
    public function __construct(
        private readonly UserLockGuard $guard,
        private readonly ?\Closure $userId = null,
    ) {
    }

    public function handle(Request $request, \Closure $next, string $name, ?string $ttlSeconds = null): mixed
    {
        $verdict = $this->guard->check(
            $name,
            $this->userOf($request),
            $ttlSeconds === null || $ttlSeconds === '' ? null : (int) $ttlSeconds,
        );
        if (!$verdict->pass) {
            return new Response(
                $verdict->body(),
                (int) $verdict->status,
                $verdict->headers + ['Content-Type' => 'application/problem+json'],
            );
        }
        $response = $next($request);
        if ($response instanceof Response) {
            foreach ($verdict->headers as $field => $value) {
                $response->headers->set($field, $value);
            }
        }
        return $response;
    }

    private function userOf(Request $request): string
    {
        if ($this->userId !== null) {
            $id = ($this->userId)($request);
            if ($id !== null && $id !== '') {
                return $id;
            }
        }
        $user = $request->user();
        if ($user !== null && method_exists($user, 'getAuthIdentifier')) {
            return (string) $user->getAuthIdentifier();
        }
        return 'ip:' . ($request->ip() ?? 'unknown');
    }
}
