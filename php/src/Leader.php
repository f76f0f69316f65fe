<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * An election's leadership (LEADER in the contract, docs/elections.md).
 * $term strictly increases for every new leader of the same name: pass it
 * downstream as the leader's fencing token.
 */
final class Leader
{
    public function __construct(
        public readonly string $name,
        public readonly string $candidate,
        public readonly string $value,
        public readonly int $term,
        public readonly \DateTimeImmutable $electedAt,
        public readonly \DateTimeImmutable $expiresAt,
    ) {
    }

    /** @throws TransportException when $data is not a LEADER */
    public static function fromArray(mixed $data): self
    {
        $data = Answer::object($data, 'leadership', [
            'name' => 'string', 'candidate' => 'string', 'value' => 'string', 'term' => 'int',
            'elected_at' => 'string', 'expires_at' => 'string',
        ]);
        return new self(
            $data['name'],
            $data['candidate'],
            $data['value'],
            $data['term'],
            Answer::time($data['elected_at']),
            Answer::time($data['expires_at'])
        );
    }
}
