<?php

declare(strict_types=1);

namespace LeaseGate;

/** One entry of a validation problem's "errors" array. */
final class FieldError
{
    public function __construct(
        public readonly string $field,
        public readonly string $message,
    ) {
    }

    public function __toString(): string
    {
        return $this->field . ': ' . $this->message;
    }
}
