<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Support;

/**
 * Base of the package's tests: assertions whose failures read
 * "what: got X, want Y", and polling for state that sends no signal.
 */
abstract class TestCase extends \PHPUnit\Framework\TestCase
{
    protected function tearDown(): void
    {
        Gateway::clearFlagged();
    }

    /** assertSame with the house's "got X, want Y" message. */
    protected static function eq(mixed $got, mixed $want, string $what): void
    {
        self::assertSame($want, $got, sprintf('%s: got %s, want %s', $what, self::show($got), self::show($want)));
    }

    /**
     * Runs $fn and asserts that it throws exactly $class (or a subclass
     * when $exact is false). Returns the exception.
     *
     * @template T of \Throwable
     *
     * @param class-string<T> $class
     *
     * @return T
     */
    protected static function throws(string $class, callable $fn, string $what, bool $exact = true): \Throwable
    {
        try {
            $fn();
        } catch (\Throwable $e) {
            self::assertTrue(
                $exact ? get_class($e) === $class : $e instanceof $class,
                sprintf('%s: got %s, want %s', $what, self::show($e), $class),
            );
            return $e;
        }
        self::fail(sprintf('%s: got no exception, want %s', $what, $class));
    }

    /** Runs $fn and returns what it threw (null when it threw nothing). */
    protected static function thrown(callable $fn): ?\Throwable
    {
        try {
            $fn();
        } catch (\Throwable $t) {
            return $t;
        }
        return null;
    }

    /** Polls $cond every 50 ms until it is true or $seconds pass. */
    protected static function eventually(callable $cond, float $seconds): bool
    {
        $deadline = microtime(true) + $seconds;
        do {
            if ($cond()) {
                return true;
            }
            usleep(50_000);
        } while (microtime(true) < $deadline);
        return (bool) $cond();
    }

    protected static function show(mixed $v): string
    {
        if ($v instanceof \Throwable) {
            return get_class($v) . '(' . $v->getMessage() . ')';
        }
        if ($v instanceof \DateTimeInterface) {
            return $v->format('Y-m-d\TH:i:s.v\Z');
        }
        if (is_object($v)) {
            return get_class($v);
        }
        $s = json_encode($v, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE);
        return $s === false ? var_export($v, true) : $s;
    }
}
