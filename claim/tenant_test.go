package claim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/claim"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/redislock"
)

func TestTenantsHaveTheirOwnClaims(t *testing.T) {
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		svc := claim.New(s.RDB, claim.Options{Config: redislock.Config{Prefix: contracttest.Prefix()}})
		ctx := t.Context()
		req := leasegate.ClaimRequest{Scope: "reward", Key: "user-1", Owner: "w1", TTL: time.Minute}
		a, err := svc.Claim(ctx, "acme", req)
		if err != nil || !a.Created {
			t.Fatalf("acme: got %+v, %v", a, err)
		}
		if _, err := svc.Complete(ctx, "acme", leasegate.CompleteRequest{Scope: "reward", Key: "user-1", Owner: "w1", Token: a.Claim.Token, Result: []byte(`1`)}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		req.Owner = "w2"
		b, err := svc.Claim(ctx, "globex", req)
		if err != nil || !b.Created || b.State != leasegate.ClaimPending {
			t.Errorf("globex: got %+v, %v; want its own new pending claim", b, err)
		}
		if _, err := svc.Get(ctx, "", "reward", "user-1"); !errors.Is(err, leasegate.ErrClaimNotFound) {
			t.Errorf("tenant \"\": got %v, want ErrClaimNotFound", err)
		}
	})
}

// A forced removal leaves a record naming the operator and the reason.
func TestRemoveIsAudited(t *testing.T) {
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		var buf logtest.Buffer
		log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), &buf, zapcore.InfoLevel))
		svc := claim.New(s.RDB, claim.Options{Config: redislock.Config{Prefix: contracttest.Prefix()}, Audit: log})
		ctx := t.Context()
		c, err := svc.Claim(ctx, "acme", leasegate.ClaimRequest{Scope: "reward", Key: "k", Owner: "w1", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Complete(ctx, "acme", leasegate.CompleteRequest{Scope: "reward", Key: "k", Owner: "w1", Token: c.Claim.Token, Result: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Remove(ctx, "acme", "reward", "k", "refunded by hand", leasegate.RequestMeta{Operator: "alice-ops", RequestID: "r1"}); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		for _, want := range []string{`"event":"claim_removed"`, `"operator":"alice-ops"`, `"reason":"refunded by hand"`, `"state":"done"`, `"tenant":"acme"`} {
			if !strings.Contains(got, want) {
				t.Errorf("got audit %s, want it to hold %s", got, want)
			}
		}
	})
}
