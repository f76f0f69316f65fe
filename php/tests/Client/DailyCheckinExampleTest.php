<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\Transport\Response;

/**
 * examples/php/daily-checkin, served by PHP's built-in server on the
 * package: a user's check-ins of one day all answer with the one reward.
 */
final class DailyCheckinExampleTest extends TestCase
{
    public function testTheRewardIsGrantedOnceADay(): void
    {
        $docroot = __DIR__ . '/../../../examples/php/daily-checkin';
        self::assertFileExists($docroot . '/index.php');
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        self::assertNotFalse($probe, 'find a free port');
        $addr = stream_socket_get_name($probe, false);
        fclose($probe);
        $env = getenv();
        $env['LEASEGATE_URL'] = Gateway::url();
        $server = proc_open([PHP_BINARY, '-S', $addr, '-t', $docroot], [1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, null, $env);
        self::assertTrue(is_resource($server), 'start php -S');
        try {
            $t = Gateway::transport();
            $user = substr(hash('sha256', Gateway::name('checkin')), 0, 16);
            $post = fn (): Response => $t->send('POST', "http://$addr/", ['X-User-Id' => $user], null, 10.0);
            self::assertTrue(self::eventually(function () use ($t, $addr): bool {
                try {
                    return $t->send('GET', "http://$addr/", [], null, 1.0)->status === 405;
                } catch (\Throwable) {
                    return false;
                }
            }, 5.0), 'the example answers');
            $first = $post();
            $second = $post();
            self::eq([$first->status, $second->status], [200, 200], 'both check-ins answer 200');
            $a = json_decode($first->body, true);
            self::eq($a['checked_in'] ?? null, true, 'checked in: ' . $first->body);
            self::eq(json_decode($second->body, true), $a, 'the second check-in shows the first one\'s reward');
            self::eq($a['reward']['user_id'] ?? null, $user, 'the reward is the user\'s');
        } finally {
            proc_terminate($server);
            proc_close($server);
        }
    }
}
