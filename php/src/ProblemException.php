<?php

declare(strict_types=1);

namespace LeaseGate;

use LeaseGate\Transport\Response;

/**
 * An RFC 9457 problem+json answer from the gateway. The concrete class is
 * chosen by the problem type's slug (the last path segment of "type"):
 * NotFoundException for "not-found", ForbiddenException for "forbidden",
 * and so on; a slug this client does not know stays a ProblemException.
 * getCode() is the HTTP status.
 */
class ProblemException extends LeaseGateException
{
    /** slug => exception class */
    private const CLASSES = [
        'validation' => ValidationException::class,
        'malformed-request' => MalformedRequestException::class,
        'not-found' => NotFoundException::class,
        'forbidden' => ForbiddenException::class,
        'unauthorized' => UnauthorizedException::class,
        'payload-too-large' => PayloadTooLargeException::class,
        'unsupported-media-type' => UnsupportedMediaTypeException::class,
        'rate-limited' => RateLimitedException::class,
        'abnormal-usage-detected' => AbnormalUsageException::class,
        'unavailable' => UnavailableException::class,
        'internal' => InternalException::class,
        'limit-mismatch' => LimitMismatchException::class,
        'claim-in-progress' => ClaimInProgressException::class,
    ];

    /** status => slug, for answers without a problem body (a proxy's 502 page, say) */
    private const STATUS_SLUGS = [
        400 => 'malformed-request',
        401 => 'unauthorized',
        403 => 'forbidden',
        404 => 'not-found',
        405 => 'malformed-request',
        413 => 'payload-too-large',
        415 => 'unsupported-media-type',
        422 => 'validation',
        429 => 'rate-limited',
        502 => 'unavailable',
        503 => 'unavailable',
        504 => 'unavailable',
    ];

    /**
     * @param list<FieldError> $fieldErrors
     * @param ?int $retryAfter seconds from the Retry-After header, when sent
     */
    final public function __construct(
        public readonly int $status,
        public readonly string $type,
        public readonly string $title,
        public readonly string $detail,
        public readonly array $fieldErrors = [],
        public readonly ?int $retryAfter = null,
    ) {
        $message = sprintf('leasegate: %d %s', $status, $this->slug());
        if ($detail !== '') {
            $message .= ': ' . $detail;
        }
        parent::__construct($message, $status);
    }

    /** The stable slug, e.g. "forbidden". */
    public function slug(): string
    {
        return self::slugOf($this->type);
    }

    /**
     * The messages given for one field (validation problems).
     *
     * @return list<string>
     */
    public function errorsFor(string $field): array
    {
        $messages = [];
        foreach ($this->fieldErrors as $e) {
            if ($e->field === $field) {
                $messages[] = $e->message;
            }
        }
        return $messages;
    }

    /** Whether the problem names that field. */
    public function hasFieldError(string $field): bool
    {
        return $this->errorsFor($field) !== [];
    }

    /**
     * Builds the exception for a non-2xx answer. A body that is not a
     * problem object still yields an exception of the class its status
     * suggests, with the body (shortened) as detail.
     */
    public static function fromResponse(Response $response): self
    {
        $retryAfter = self::parseRetryAfter($response->header('Retry-After'));
        $problem = null;
        try {
            $problem = json_decode($response->body, true, 32, JSON_THROW_ON_ERROR);
        } catch (\JsonException) {
        }
        if (is_array($problem) && isset($problem['type']) && is_string($problem['type']) && $problem['type'] !== '') {
            $fieldErrors = [];
            foreach (is_array($problem['errors'] ?? null) ? $problem['errors'] : [] as $e) {
                if (is_array($e) && is_string($e['field'] ?? null) && is_string($e['message'] ?? null)) {
                    $fieldErrors[] = new FieldError($e['field'], $e['message']);
                }
            }
            $status = is_int($problem['status'] ?? null) ? $problem['status'] : $response->status;
            $class = self::classFor(self::slugOf($problem['type']), $response->status);
            return new $class(
                $status,
                $problem['type'],
                is_string($problem['title'] ?? null) ? $problem['title'] : '',
                is_string($problem['detail'] ?? null) ? $problem['detail'] : '',
                $fieldErrors,
                $retryAfter,
            );
        }
        $slug = self::STATUS_SLUGS[$response->status] ?? ($response->status >= 500 ? 'internal' : 'malformed-request');
        $detail = trim($response->body);
        if (strlen($detail) > 200) {
            $detail = substr($detail, 0, 200) . '...';
        }
        $class = self::classFor($slug, $response->status);
        return new $class($response->status, 'about:blank/' . $slug, '', $detail, [], $retryAfter);
    }

    /** @return class-string<ProblemException> */
    private static function classFor(string $slug, int $status): string
    {
        if ($status === 405) {
            // The gateway answers a wrong method with the contract's
            // "malformed-request" slug; the status says which case it is.
            return MethodNotAllowedException::class;
        }
        return self::CLASSES[$slug] ?? self::CLASSES[self::STATUS_SLUGS[$status] ?? ''] ?? self::class;
    }

    private static function slugOf(string $type): string
    {
        $path = parse_url($type, PHP_URL_PATH);
        $path = is_string($path) ? $path : $type;
        $slash = strrpos($path, '/');
        return $slash === false ? $path : substr($path, $slash + 1);
    }

    /** Retry-After as delay-seconds, or as an HTTP date turned into seconds from now. */
    private static function parseRetryAfter(?string $value): ?int
    {
        if ($value === null || $value === '') {
            return null;
        }
        if (preg_match('/^\d+$/', $value) === 1) {
            return (int) $value;
        }
        $at = strtotime($value);
        return $at === false ? null : max(0, $at - time());
    }
}
