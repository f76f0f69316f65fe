<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * Verifies the Leasegate-Signature header of a webhook delivery:
 *
 *     Leasegate-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t . "." . body)>
 *
 * Pass the raw request body (file_get_contents('php://input')), not a
 * re-encoded one. A timestamp further than $toleranceSeconds from now is
 * refused (replay protection; 0 skips the check). De-duplicate accepted
 * events by their "id": delivery is at least once.
 */
final class WebhookSignature
{
    public static function verify(
        string $secret,
        ?string $header,
        string $body,
        int $toleranceSeconds = 300,
        ?int $now = null,
    ): bool {
        if ($header === null || $header === '') {
            return false;
        }
        $t = null;
        $signatures = [];
        foreach (explode(',', $header) as $part) {
            [$k, $v] = array_pad(explode('=', trim($part), 2), 2, '');
            if ($k === 't') {
                $t = $v;
            } elseif ($k === 'v1') {
                $signatures[] = $v;
            }
        }
        if ($t === null || preg_match('/^[0-9]{1,12}$/', $t) !== 1 || $signatures === []) {
            return false;
        }
        if ($toleranceSeconds > 0 && abs(($now ?? time()) - (int) $t) > $toleranceSeconds) {
            return false;
        }
        $expected = hash_hmac('sha256', $t . '.' . $body, $secret);
        foreach ($signatures as $sig) {
            if (hash_equals($expected, $sig)) {
                return true;
            }
        }
        return false;
    }
}
