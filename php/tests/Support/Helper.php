<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Support;

use PHPUnit\Framework\Assert;

/**
 * A helper process from tests/bin (another PHP process holding or
 * releasing a lock), talked to line by line.
 */
final class Helper
{
    /** @var resource */
    private $proc;

    /** @var array<int, resource> */
    private array $pipes;

    /** @param list<string> $args */
    public function __construct(string $script, array $args)
    {
        $proc = proc_open(
            array_merge([PHP_BINARY, __DIR__ . '/../bin/' . $script], $args),
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
            $pipes,
        );
        Assert::assertTrue(is_resource($proc), "start tests/bin/$script");
        $this->proc = $proc;
        $this->pipes = $pipes;
    }

    /** The next line the helper prints, without its line break. */
    public function line(): string
    {
        return trim((string) fgets($this->pipes[1]));
    }

    public function send(string $line): void
    {
        fwrite($this->pipes[0], $line . "\n");
        fflush($this->pipes[0]);
    }

    /**
     * Waits for the helper to end.
     *
     * @return array{0: int, 1: string} its exit status and the rest of its output
     */
    public function finish(): array
    {
        fclose($this->pipes[0]);
        $out = trim(stream_get_contents($this->pipes[1]) . stream_get_contents($this->pipes[2]));
        fclose($this->pipes[1]);
        fclose($this->pipes[2]);
        return [proc_close($this->proc), $out];
    }
}
