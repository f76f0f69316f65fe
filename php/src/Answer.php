<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * @internal checks the objects of the gateway's answers (LOCK, PERMIT,
 * CLAIM in the contract) and reads their timestamps, for every class that
 * decodes one.
 */
final class Answer
{
    /**
     * Returns $data when it is an object with every field of $fields
     * ('string' or 'int' each).
     *
     * @param array<string, 'string'|'int'> $fields
     *
     * @return array<string, mixed>
     *
     * @throws TransportException naming the object $name and its fields otherwise
     */
    public static function object(mixed $data, string $name, array $fields): array
    {
        $ok = is_array($data);
        foreach ($fields as $field => $type) {
            if (!$ok) {
                break;
            }
            $value = $data[$field] ?? null;
            $ok = $type === 'int' ? is_int($value) : is_string($value);
        }
        if (!$ok) {
            throw new TransportException(sprintf(
                'leasegate: unexpected answer: "%s" is not {%s}',
                $name,
                implode(', ', array_keys($fields)),
            ));
        }
        return $data;
    }

    /** Parses the contract's RFC 3339 UTC timestamps. */
    public static function time(string $value): \DateTimeImmutable
    {
        $t = \DateTimeImmutable::createFromFormat('Y-m-d\TH:i:s.vP', $value)
            ?: \DateTimeImmutable::createFromFormat(\DateTimeInterface::RFC3339, $value);
        if ($t === false) {
            throw new TransportException(
                sprintf('leasegate: unexpected answer: %s is not an RFC 3339 timestamp', json_encode($value)),
            );
        }
        return $t->setTimezone(new \DateTimeZone('UTC'));
    }
}
