package audit

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
)

// Recorder writes audit records for the wrappers: a failed write is
// logged (the action itself has happened and is answered as done).
type Recorder struct {
	Log    leasegate.AuditLog
	Errors *zap.Logger
	// Timeout bounds one write, which runs even when the request's
	// context has ended (default 2 s).
	Timeout time.Duration
}

// Record writes one record of action on target by meta's operator:
// reason exactly as the operator gave it, the other facts in details.
func (r Recorder) Record(ctx context.Context, tenant, action, target, reason string, details leasegate.AuditDetails, meta leasegate.RequestMeta) {
	if r.Log == nil {
		return
	}
	d := r.Timeout
	if d <= 0 {
		d = 2 * time.Second
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	actor := meta.Operator
	if actor == "" {
		actor = leasegate.OpenModeActor // no principal named one
	}
	err := r.Log.Record(c, tenant, leasegate.AuditRecord{
		Actor: actor, Action: action, Target: target,
		Reason: reason, Details: details, RequestID: meta.RequestID,
	})
	if err != nil && r.Errors != nil {
		r.Errors.Error("could not write an audit record", zap.String("action", action),
			zap.String("tenant", tenant), zap.String("target", target), zap.Error(err))
	}
}

// Locks records the forced releases of a LockOperator.
type Locks struct {
	leasegate.LockOperator
	Rec Recorder
}

// ForceRelease implements leasegate.LockOperator.
func (l Locks) ForceRelease(ctx context.Context, tenant, resource, reason string, meta leasegate.RequestMeta) (leasegate.Lock, error) {
	lk, err := l.LockOperator.ForceRelease(ctx, tenant, resource, reason, meta)
	if err == nil {
		l.Rec.Record(ctx, tenant, leasegate.AuditForceRelease, "lock:"+resource, reason,
			leasegate.AuditDetails{"owner": lk.Owner, "token": lk.Token}, meta)
	}
	return lk, err
}

// Flags records the bans, unbans and clears of a FlagRegistry.
type Flags struct {
	leasegate.FlagRegistry
	Rec Recorder
}

// ClearFlags implements leasegate.FlagRegistry.
func (f Flags) ClearFlags(ctx context.Context, tenant, userID string, meta leasegate.RequestMeta) error {
	err := f.FlagRegistry.ClearFlags(ctx, tenant, userID, meta)
	if err == nil {
		f.Rec.Record(ctx, tenant, leasegate.AuditClear, "user:"+userID, "", nil, meta)
	}
	return err
}

// BanUser implements leasegate.FlagRegistry.
func (f Flags) BanUser(ctx context.Context, tenant, userID string, d time.Duration, reason string, meta leasegate.RequestMeta) (leasegate.Ban, error) {
	b, err := f.FlagRegistry.BanUser(ctx, tenant, userID, d, reason, meta)
	if err == nil {
		f.Rec.Record(ctx, tenant, leasegate.AuditBan, "user:"+userID, reason,
			leasegate.AuditDetails{"seconds": int64(d / time.Second), "until": leasegate.FormatTime(b.Until)}, meta)
	}
	return b, err
}

// Unban implements leasegate.FlagRegistry.
func (f Flags) Unban(ctx context.Context, tenant, userID string, meta leasegate.RequestMeta) error {
	err := f.FlagRegistry.Unban(ctx, tenant, userID, meta)
	if err == nil {
		f.Rec.Record(ctx, tenant, leasegate.AuditUnban, "user:"+userID, "", nil, meta)
	}
	return err
}

// Claims records the forced removals of a ClaimService.
type Claims struct {
	leasegate.ClaimService
	Rec Recorder
}

// Remove implements leasegate.ClaimService.
func (c Claims) Remove(ctx context.Context, tenant, scope, key, reason string, meta leasegate.RequestMeta) (leasegate.ClaimState, error) {
	st, err := c.ClaimService.Remove(ctx, tenant, scope, key, reason, meta)
	if err == nil {
		c.Rec.Record(ctx, tenant, leasegate.AuditClaimRemove, "claim:"+scope+"/"+key, reason,
			leasegate.AuditDetails{"state": st.String()}, meta)
	}
	return st, err
}

// Wrap gives each service whose operator actions the trail records its
// recording wrapper: the lock operator always, the flag registry and the
// claim service when they are there (nil stays nil).
func (r Recorder) Wrap(op leasegate.LockOperator, flags leasegate.FlagRegistry, claims leasegate.ClaimService) (leasegate.LockOperator, leasegate.FlagRegistry, leasegate.ClaimService) {
	if flags != nil {
		flags = Flags{FlagRegistry: flags, Rec: r}
	}
	if claims != nil {
		claims = Claims{ClaimService: claims, Rec: r}
	}
	return Locks{LockOperator: op, Rec: r}, flags, claims
}
