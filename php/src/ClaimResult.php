<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * A claim's state: "pending" ($claim is set; $created when this call
 * started it, so the caller does the work now) or "done" ($result, the
 * stored JSON decoded as json_decode(..., true) does, $completedAt and
 * $token are set: the work already happened).
 */
final class ClaimResult
{
    public function __construct(
        public readonly string $state,
        public readonly bool $created,
        public readonly ?Claim $claim,
        public readonly mixed $result = null,
        public readonly ?\DateTimeImmutable $completedAt = null,
        public readonly ?int $token = null,
    ) {
    }

    public function done(): bool
    {
        return $this->state === 'done';
    }

    /** @throws TransportException when the answer has neither documented shape */
    public static function fromArray(mixed $data, bool $created = false): self
    {
        if (is_array($data) && ($data['state'] ?? null) === 'pending') {
            $claim = Claim::fromArray($data['claim'] ?? null);
            return new self('pending', $created, $claim, null, null, $claim->token);
        }
        if (
            is_array($data) && ($data['state'] ?? null) === 'done' && array_key_exists('result', $data)
            && is_string($data['completed_at'] ?? null) && is_int($data['token'] ?? null)
        ) {
            return new self('done', false, null, $data['result'], Answer::time($data['completed_at']), $data['token']);
        }
        throw new TransportException('leasegate: unexpected answer: a claim is neither pending nor done');
    }
}
