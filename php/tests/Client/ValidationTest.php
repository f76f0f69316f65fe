<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Client;

use LeaseGate\NotFoundException;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\ValidationException;

/** 422 validation problems become ValidationException with field errors */
final class ValidationTest extends TestCase
{
    public function testValidationProblemsNameTheirFields(): void
    {
        $c = Gateway::client();
        $res = Gateway::name('valid');

        $e = self::throws(ValidationException::class, fn () => $c->acquire($res, 'o', 0), 'ttl 0');
        self::eq([$e?->status, $e?->slug(), $e?->hasFieldError('ttl_seconds')], [422, 'validation', true], 'ttl 0 names ttl_seconds');
        $e = self::throws(ValidationException::class, fn () => $c->acquire($res, 'o', 86401), 'ttl over max_ttl');
        self::eq($e?->hasFieldError('ttl_seconds'), true, 'ttl over max names ttl_seconds');
        $e = self::throws(ValidationException::class, fn () => $c->acquire($res, '   ', 30), 'whitespace-only owner');
        self::eq($e?->hasFieldError('owner'), true, 'blank owner names owner');
        $e = self::throws(ValidationException::class, fn () => $c->acquire($res, " \t", -5), 'two bad fields');
        self::eq([$e?->hasFieldError('owner'), $e?->hasFieldError('ttl_seconds')], [true, true], 'both fields named');
        $e = self::throws(ValidationException::class, fn () => $c->acquire($res, 'o', 30, -1), 'negative wait_ms');
        self::eq($e?->hasFieldError('wait_ms'), true, 'negative wait_ms names wait_ms');
        $e = self::throws(ValidationException::class, fn () => $c->acquire(str_repeat('r', 256), 'o', 30), '256-byte resource');
        self::eq($e?->hasFieldError('resource'), true, '256-byte resource names resource');
        $e = self::throws(ValidationException::class, fn () => $c->acquire("bad\xffutf8", 'o', 30), 'resource that is not UTF-8');
        self::eq($e?->hasFieldError('resource'), true, 'invalid UTF-8 names resource');
        $e = self::throws(ValidationException::class, fn () => $c->acquire("line\nbreak", 'o', 30), 'resource with a control character');
        self::eq($e?->hasFieldError('resource'), true, 'control character names resource');
        $e = self::throws(ValidationException::class, fn () => $c->renew($res, 'o', 0), 'renew with ttl 0');
        self::eq($e?->hasFieldError('ttl_seconds'), true, 'renew ttl 0 names ttl_seconds');
        self::assertTrue($e === null || $e->getMessage() !== '', 'exception message is set');

        self::throws(NotFoundException::class, fn () => $c->status($res), 'rejected requests changed nothing');

        $long = Gateway::name('long');
        $long .= str_repeat('x', 255 - strlen($long));
        self::eq($c->acquire($long, 'o', 30)->acquired, true, '255-byte resource is accepted');
        $c->release($long, 'o');
    }
}
