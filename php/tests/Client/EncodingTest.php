<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\NotFoundException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;

/** resource names with spaces, unicode, slashes and more round-trip */
final class EncodingTest extends TestCase
{
    public function testEveryNameIsItsOwnLock(): void
    {
        $c = Gateway::client();
        $names = [
            'space' => 'a b',
            'slash' => 'a/b',
            'encoded-slash' => 'a%2Fb',
            'percent' => '100%',
            'plus' => 'a+b',
            'query' => 'q?x=1&y=2#frag',
            'unicode' => 'ü',
            'cjk' => '日本語 ロック',
            'emoji' => '🔒',
            'braces' => '{a}',
            'colon' => 'a:fence',
            'sql' => "x'; DROP TABLE distributed_locks; --",
            'dot' => '.',
            'dotdot' => '..',
            'trailing-slash' => 'dir/',
            'backslash' => 'a\\b',
            'tilde' => '~user',
        ];
        $tokens = [];
        foreach ($names as $label => $suffix) {
            $res = Gateway::name('enc') . '|' . $suffix;
            if ($label === 'dot' || $label === 'dotdot') {
                $res = $suffix; // exactly "." and "..": shared between runs, released below
            }
            $r = $c->acquire($res, 'o-' . $label, 30);
            self::eq($r->acquired, true, "acquire $label " . self::show($res));
            self::eq($r->lease?->resource, $res, "$label: lease names the exact resource");
            self::eq($c->status($res)->owner, 'o-' . $label, "$label: status finds it under the same name");
            $tokens[$label] = $r->lease?->token;
        }
        self::eq(count(array_unique($tokens)), count($tokens), 'every name is its own lock (all held at once, distinct tokens)');

        // Neighbours that an encoding bug would merge stay apart.
        $base = Gateway::name('enc') . '|';
        self::throws(NotFoundException::class, fn () => $c->status($base . 'a'), '"a" is not "a/b"');
        self::throws(NotFoundException::class, fn () => $c->status($base . 'a b/c'), '"a b/c" was never taken');
        self::eq($c->status($base . 'a%2Fb')->owner, 'o-encoded-slash', '"a%2Fb" is not "a/b"');
        self::eq($c->status($base . 'a/b')->owner, 'o-slash', '"a/b" is not "a%2Fb"');

        foreach ($names as $label => $suffix) {
            $res = ($label === 'dot' || $label === 'dotdot') ? $suffix : Gateway::name('enc') . '|' . $suffix;
            if (isset($tokens[$label])) {
                $c->release($res, 'o-' . $label, $tokens[$label]);
                self::throws(NotFoundException::class, fn () => $c->status($res), "$label: released");
            }
        }
    }
}
