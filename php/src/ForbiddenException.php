<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * 403 "forbidden": the lock is held by another owner or under another token
 * (it is not gone: someone else has it), or the API key lacks the role.
 */
class ForbiddenException extends ProblemException
{
}
