<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * The answer to campaign: $leader with the $leadership, or not, with the
 * $current leader (null during a lock delay) and a hint how long until
 * the leadership may be free. Losing a campaign is an answer, not an
 * exception.
 */
final class CampaignResult
{
    public function __construct(
        public readonly bool $leader,
        public readonly ?Leader $leadership,
        public readonly ?Leader $current = null,
        public readonly int $retryAfterMs = 0,
    ) {
    }

    /** @throws TransportException when the answer has neither documented shape */
    public static function fromArray(mixed $data): self
    {
        if (!is_array($data) || !is_bool($data['leader'] ?? null)) {
            throw new TransportException('leasegate: unexpected answer to a campaign');
        }
        if ($data['leader']) {
            return new self(true, Leader::fromArray($data['leadership'] ?? null));
        }
        $current = ($data['current'] ?? null) === null ? null : Leader::fromArray($data['current']);
        return new self(false, null, $current, is_int($data['retry_after_ms'] ?? null) ? $data['retry_after_ms'] : 0);
    }
}
