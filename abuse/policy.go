package abuse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/leasegate/leasegate"
)

// Defaults of the abuse policy (docs/abuse.md).
const (
	DefaultMaxAttempts   = 5
	DefaultFlagRetention = 30 * 24 * time.Hour
	// The attempt log's bounds per lock (docs/abuse.md, "Backtesting a
	// policy", where its cost is): on by default, so a backtest has a day
	// of attempts to replay; 100,000 entries are about 5 MB.
	DefaultAttemptLogRetention  = 24 * time.Hour
	DefaultAttemptLogMaxEntries = 100_000
	// MaxRollingWindow bounds rolling_window_seconds.
	MaxRollingWindow = 24 * time.Hour
	// MaxAttemptLogMaxEntries bounds attempt_log_max_entries.
	MaxAttemptLogMaxEntries = 100_000_000
)

// Policy is how one lock name treats repeated attempts.
type Policy struct {
	// MaxAttempts: the attempt that reaches it in one window flags the user.
	MaxAttempts int
	// BanAfterFlags: when > 0 (and BanFor > 0), the K-th flagged window
	// (within the flag retention) and every one after it bans the user.
	BanAfterFlags int
	// BanFor (ban_seconds) is the length of the first automatic ban; the
	// n-th lasts BanFor × Factor^(n-1), at most MaxBanFor (fail2ban's
	// bantime.increment). The count n is kept on the flag record, for as
	// long as the record (the flag retention).
	BanFor time.Duration
	// Factor (factor) multiplies each further automatic ban; 0 means 1
	// (every ban lasts BanFor, the behaviour before escalation).
	Factor float64
	// MaxBanFor (max_ban_seconds) caps an automatic ban; 0 means
	// leasegate.MaxBan (a year).
	MaxBanFor time.Duration
	// Shadow flags and logs but never places or enforces a ban on this lock.
	Shadow bool
	// Rolling (rolling_window_seconds), when > 0, applies MaxAttempts to
	// the attempts within the last Rolling instead of to the window's
	// (docs/abuse.md, "Rolling windows").
	Rolling time.Duration
}

// Policies is the whole abuse configuration.
type Policies struct {
	// Default applies to every lock name without its own entry.
	Default Policy
	// Locks are per lock name policies.
	Locks map[string]Policy
	// Allowlist: user ids that are never flagged or banned (in any tenant).
	Allowlist map[string]bool
	// FlagRetention: how long a flag record is kept after its last flag.
	FlagRetention time.Duration
	// AttemptLogRetention and AttemptLogMaxEntries bound the attempt log
	// of each lock, by age and by length (XADD MAXLEN ~); 0 entries turns
	// the log off.
	AttemptLogRetention  time.Duration
	AttemptLogMaxEntries int64
}

// DefaultPolicies are the documented defaults: 5 attempts, no policy bans,
// flags kept 30 days.
func DefaultPolicies() Policies {
	return Policies{
		Default:       Policy{MaxAttempts: DefaultMaxAttempts},
		Locks:         map[string]Policy{},
		Allowlist:     map[string]bool{},
		FlagRetention: DefaultFlagRetention,

		AttemptLogRetention:  DefaultAttemptLogRetention,
		AttemptLogMaxEntries: DefaultAttemptLogMaxEntries,
	}
}

// IsZero reports whether p is the zero value (no policies configured at
// all); New and server.Config treat it as DefaultPolicies().
func (p Policies) IsZero() bool {
	return p.Default == (Policy{}) && len(p.Locks) == 0 && len(p.Allowlist) == 0 && p.FlagRetention == 0 &&
		p.AttemptLogRetention == 0 && p.AttemptLogMaxEntries == 0
}

// For returns the policy of lock name.
func (p Policies) For(lock string) Policy {
	if lp, ok := p.Locks[lock]; ok {
		return lp
	}
	return p.Default
}

// Validate checks the policies.
func (p Policies) Validate() error {
	var errs []error
	check := func(where string, q Policy) {
		for _, f := range q.problems() {
			errs = append(errs, fmt.Errorf("%s: %s %s", where, f.Field, f.Message))
		}
	}
	check("default", p.Default)
	names := make([]string, 0, len(p.Locks))
	for n := range p.Locks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !leasegate.UserLockName.MatchString(n) {
			errs = append(errs, fmt.Errorf("locks: %q is not a valid lock name ([A-Za-z0-9._-]{1,64})", n))
		}
		check("locks."+n, p.Locks[n])
	}
	if p.FlagRetention < time.Second {
		errs = append(errs, errors.New("flag retention must be at least 1s"))
	}
	if p.AttemptLogMaxEntries < 0 || p.AttemptLogMaxEntries > MaxAttemptLogMaxEntries {
		errs = append(errs, fmt.Errorf("attempt_log_max_entries must be from 0 (no log) to %d", MaxAttemptLogMaxEntries))
	}
	if p.AttemptLogMaxEntries > 0 && p.AttemptLogRetention < time.Second {
		errs = append(errs, errors.New("attempt log retention must be at least 1s"))
	}
	return errors.Join(errs...)
}

// problems are q's invalid fields, named as in the policy file.
func (q Policy) problems() []leasegate.FieldError {
	var out []leasegate.FieldError
	bad := func(field, msg string) { out = append(out, leasegate.FieldError{Field: field, Message: msg}) }
	if q.MaxAttempts < 1 {
		bad("max_attempts", "must be at least 1")
	}
	if q.BanAfterFlags < 0 {
		bad("ban_after_flags", "must not be negative")
	}
	if q.BanFor < 0 {
		bad("ban_seconds", "must not be negative")
	}
	if q.Factor != 0 && (q.Factor < 1 || q.Factor > 100) {
		bad("factor", "must be from 1 to 100")
	}
	if q.MaxBanFor < 0 || q.MaxBanFor > leasegate.MaxBan {
		bad("max_ban_seconds", "must be from 0 (a year) to 31536000")
	}
	if q.MaxBanFor > 0 && q.MaxBanFor < q.BanFor {
		bad("max_ban_seconds", "must not be below ban_seconds")
	}
	if (q.BanAfterFlags > 0) != (q.BanFor > 0) {
		bad("ban_after_flags", "and ban_seconds go together (both set or both 0)")
	}
	if q.Rolling != 0 && (q.Rolling < time.Second || q.Rolling > MaxRollingWindow) {
		bad("rolling_window_seconds", "must be from 1 to 86400")
	}
	return out
}

// policyJSON is a policy in the file: absent fields inherit.
type policyJSON struct {
	MaxAttempts   *int     `json:"max_attempts"`
	BanAfterFlags *int     `json:"ban_after_flags"`
	BanSeconds    *int     `json:"ban_seconds"`
	Factor        *float64 `json:"factor"`
	MaxBanSeconds *int     `json:"max_ban_seconds"`
	Shadow        *bool    `json:"shadow"`
	Rolling       *int     `json:"rolling_window_seconds"`
}

func (j policyJSON) apply(p Policy) Policy {
	if j.MaxAttempts != nil {
		p.MaxAttempts = *j.MaxAttempts
	}
	if j.BanAfterFlags != nil {
		p.BanAfterFlags = *j.BanAfterFlags
	}
	if j.BanSeconds != nil {
		p.BanFor = time.Duration(*j.BanSeconds) * time.Second
	}
	if j.Factor != nil {
		p.Factor = *j.Factor
	}
	if j.MaxBanSeconds != nil {
		p.MaxBanFor = time.Duration(*j.MaxBanSeconds) * time.Second
	}
	if j.Shadow != nil {
		p.Shadow = *j.Shadow
	}
	if j.Rolling != nil {
		p.Rolling = -1 // out of range: refused by problems, not taken for "no span"
		if *j.Rolling >= 1 && *j.Rolling <= int(MaxRollingWindow/time.Second) {
			p.Rolling = time.Duration(*j.Rolling) * time.Second
		}
	}
	return p
}

type fileJSON struct {
	Default              policyJSON            `json:"default"`
	Locks                map[string]policyJSON `json:"locks"`
	Allowlist            []string              `json:"allowlist"`
	FlagRetentionSeconds *int                  `json:"flag_retention_seconds"`

	AttemptLogRetentionSeconds *int   `json:"attempt_log_retention_seconds"`
	AttemptLogMaxEntries       *int64 `json:"attempt_log_max_entries"`
}

// ParsePolicies reads a policy file (JSON, docs/abuse.md) on top of base:
// what the file sets wins, what it leaves out keeps base's value; a lock's
// entry inherits every field it leaves out from the (merged) default.
// Unknown fields are an error.
func ParsePolicies(r io.Reader, base Policies) (Policies, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Policies{}, fmt.Errorf("abuse: policy file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileJSON
	if err := dec.Decode(&f); err != nil {
		return Policies{}, fmt.Errorf("abuse: policy file: %w", err)
	}
	if dec.More() {
		return Policies{}, errors.New("abuse: policy file: unexpected data after the JSON object")
	}
	out := Policies{
		Default:       f.Default.apply(base.Default),
		Locks:         map[string]Policy{},
		Allowlist:     map[string]bool{},
		FlagRetention: base.FlagRetention,

		AttemptLogRetention:  base.AttemptLogRetention,
		AttemptLogMaxEntries: base.AttemptLogMaxEntries,
	}
	for n, p := range base.Locks {
		out.Locks[n] = p
	}
	for n, p := range f.Locks {
		out.Locks[n] = p.apply(out.Default)
	}
	for u := range base.Allowlist {
		out.Allowlist[u] = true
	}
	for _, u := range f.Allowlist {
		out.Allowlist[u] = true
	}
	if f.FlagRetentionSeconds != nil {
		out.FlagRetention = time.Duration(*f.FlagRetentionSeconds) * time.Second
	}
	if f.AttemptLogRetentionSeconds != nil {
		out.AttemptLogRetention = time.Duration(*f.AttemptLogRetentionSeconds) * time.Second
	}
	if f.AttemptLogMaxEntries != nil {
		out.AttemptLogMaxEntries = *f.AttemptLogMaxEntries
	}
	if err := out.Validate(); err != nil {
		return Policies{}, fmt.Errorf("abuse: policy file: %w", err)
	}
	return out, nil
}

// LoadPolicies reads the policy file at path on top of base.
func LoadPolicies(path string, base Policies) (Policies, error) {
	f, err := os.Open(path)
	if err != nil {
		return Policies{}, fmt.Errorf("abuse: policy file: %w", err)
	}
	defer f.Close()
	return ParsePolicies(f, base)
}

// BanLength is the length of the n-th automatic ban (n >= 1) under p:
// BanFor × Factor^(n-1), capped by MaxBanFor (or leasegate.MaxBan). The
// attempt script computes the same in Redis, atomically with the count.
func (p Policy) BanLength(n int64) time.Duration {
	f, limit := p.factor(), p.maxBan()
	d := float64(p.BanFor.Milliseconds())
	for i := int64(1); i < n && d < float64(limit.Milliseconds()); i++ {
		d *= f
	}
	return min(time.Duration(d)*time.Millisecond, limit)
}

func (p Policy) factor() float64 {
	if p.Factor == 0 {
		return 1
	}
	return p.Factor
}

func (p Policy) maxBan() time.Duration {
	if p.MaxBanFor == 0 {
		return leasegate.MaxBan
	}
	return p.MaxBanFor
}
