<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Support;

use PHPUnit\Framework\Assert;

/** Skips a framework test when the framework is missing (fails it under CI=true). */
final class Frameworks
{
    public static function require(string $class, string $debianPackage): void
    {
        if (class_exists($class) || interface_exists($class)) {
            return;
        }
        $why = sprintf('%s is not installed (apt-get install %s)', $class, $debianPackage);
        if (getenv('CI') === 'true') {
            Assert::fail($why);
        }
        Assert::markTestSkipped($why);
    }
}
