<?php

declare(strict_types=1);

// A tiny assertion harness: checks print what failed ("got X, want Y") and
// count; run_group() reports each group on its own so the output shows
// which part of the contract broke. No PHPUnit, no Composer.

final class Harness
{
    public static int $checks = 0;
    public static int $failures = 0;
    public static string $group = '';
}

function show(mixed $v): string
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

function fail(string $what): void
{
    Harness::$failures++;
    $caller = debug_backtrace(DEBUG_BACKTRACE_IGNORE_ARGS, 3);
    $line = 0;
    foreach ($caller as $frame) {
        if (($frame['file'] ?? '') !== __FILE__) {
            $line = $frame['line'] ?? 0;
            break;
        }
    }
    printf("  FAIL [%s] %s (line %d)\n", Harness::$group, $what, $line);
}

function check(bool $ok, string $what): bool
{
    Harness::$checks++;
    if (!$ok) {
        fail($what);
    }
    return $ok;
}

function eq(mixed $got, mixed $want, string $what): bool
{
    Harness::$checks++;
    if ($got !== $want) {
        fail(sprintf('%s: got %s, want %s', $what, show($got), show($want)));
        return false;
    }
    return true;
}

/**
 * Runs $fn and checks that it throws exactly $class (or a subclass when
 * $exact is false). Returns the exception, or null.
 *
 * @template T of \Throwable
 * @param class-string<T> $class
 * @return ?T
 */
function throws(string $class, callable $fn, string $what, bool $exact = true): ?\Throwable
{
    Harness::$checks++;
    try {
        $fn();
    } catch (\Throwable $e) {
        if ($exact ? get_class($e) === $class : $e instanceof $class) {
            return $e;
        }
        fail(sprintf('%s: got %s, want %s', $what, show($e), $class));
        return null;
    }
    fail(sprintf('%s: got no exception, want %s', $what, $class));
    return null;
}

/** Runs one group; an exception escaping it fails the group. Returns its failure count. */
function run_group(string $name, string $title, callable $fn): int
{
    Harness::$group = $name;
    $before = Harness::$failures;
    $checksBefore = Harness::$checks;
    printf("== %s: %s\n", $name, $title);
    $start = microtime(true);
    try {
        $fn();
    } catch (\Throwable $e) {
        // Name the test line that made the failing call, not the library's.
        $where = basename($e->getFile()) . ':' . $e->getLine();
        foreach ($e->getTrace() as $frame) {
            $file = $frame['file'] ?? '';
            if (dirname($file) === __DIR__ && $file !== __FILE__) {
                $where = basename($file) . ':' . ($frame['line'] ?? 0);
                break;
            }
        }
        Harness::$failures++;
        printf("  FAIL [%s] stopped by %s at %s\n", Harness::$group, show($e), $where);
    }
    $failed = Harness::$failures - $before;
    printf(
        "   %s %s (%d checks, %d failed, %.2f s)\n",
        $failed === 0 ? 'ok  ' : 'FAIL',
        $name,
        Harness::$checks - $checksBefore,
        $failed,
        microtime(true) - $start
    );
    return $failed;
}

/** Polls $cond every 50 ms until it is true or $seconds pass. */
function eventually(callable $cond, float $seconds): bool
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
