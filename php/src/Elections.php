<?php

declare(strict_types=1);

namespace LeaseGate;

/**
 * Leader election (docs/elections.md), as methods of Client.
 *
 * @internal used by Client only
 */
trait Elections
{
    /**
     * POST /elections/{name}/campaign: leads (a new term, or the same term
     * renewed when $candidate already leads, with $value proclaimed), or
     * not, with the current leader. $waitMs > 0 queues (FIFO).
     *
     * @throws LeaseGateException
     */
    public function campaign(
        string $name,
        string $candidate,
        int $ttlSeconds,
        string $value = '',
        int $waitMs = 0,
        ?int $lockDelayMs = null,
    ): CampaignResult {
        $body = ['candidate' => $candidate, 'value' => $value, 'ttl_seconds' => $ttlSeconds];
        if ($waitMs !== 0) {
            $body['wait_ms'] = $waitMs;
        }
        if ($lockDelayMs !== null) {
            $body['lock_delay_ms'] = $lockDelayMs;
        }
        $data = $this->call(
            'POST',
            '/elections/' . self::segment($name, 'name') . '/campaign',
            $body,
            null,
            max(0, $waitMs) / 1000,
        );
        return CampaignResult::fromArray($data);
    }

    /**
     * POST /elections/{name}/proclaim: the leadership with $value, same term.
     *
     * @throws NotFoundException $leader no longer leads with its term
     * @throws LeaseGateException
     */
    public function proclaim(Leader $leader, string $value): Leader
    {
        $data = $this->call(
            'POST',
            '/elections/' . self::segment($leader->name, 'name') . '/proclaim',
            ['candidate' => $leader->candidate, 'term' => $leader->term, 'value' => $value]
        );
        return Leader::fromArray(is_array($data) ? ($data['leadership'] ?? null) : null);
    }

    /**
     * DELETE /elections/{name}: ends the leadership at once (no lock delay).
     *
     * @throws NotFoundException $leader no longer leads with its term
     * @throws LeaseGateException
     */
    public function resign(Leader $leader): void
    {
        $this->call(
            'DELETE',
            '/elections/' . self::segment($leader->name, 'name'),
            ['candidate' => $leader->candidate, 'term' => $leader->term],
        );
    }

    /**
     * GET /elections/{name}.
     *
     * @throws NotFoundException the election has no leader
     * @throws LeaseGateException
     */
    public function leader(string $name): Leader
    {
        $data = $this->call('GET', '/elections/' . self::segment($name, 'name'));
        return Leader::fromArray(is_array($data) ? ($data['leadership'] ?? null) : null);
    }

    /**
     * Runs $fn only on the leader of election $name, for a cron body that
     * many hosts start and one must run: campaigns without waiting; when
     * another candidate leads, returns null without running $fn; when
     * this one leads, runs $fn($leader) (pass $leader->term downstream as
     * the fencing token) and resigns afterwards, also when $fn throws.
     * Choose $ttlSeconds longer than $fn takes: PHP has no background
     * thread to renew (campaign again with the same candidate to renew).
     *
     * @template T
     * @param callable(Leader): T $fn
     * @return T|null
     *
     * @throws LeaseGateException
     */
    public function onlyOnLeader(
        string $name,
        callable $fn,
        int $ttlSeconds = 300,
        ?string $candidate = null,
        string $value = '',
    ): mixed {
        $r = $this->campaign($name, $candidate ?? self::defaultOwner(), $ttlSeconds, $value);
        if (!$r->leader || $r->leadership === null) {
            return null;
        }
        try {
            return $fn($r->leadership);
        } finally {
            try {
                $this->resign($r->leadership);
            } catch (NotFoundException) {
                // The leadership expired while $fn ran: nothing to resign.
            }
        }
    }
}
