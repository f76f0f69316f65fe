package faults

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestLeaseModel pins the model on small hand-made histories: what it
// must accept (so the suite raises no false alarm) and what it must
// refuse. Redis times are milliseconds, call and return nanoseconds.
func TestLeaseModel(t *testing.T) {
	const s = int64(time.Second)
	grant := func(owner string, call, ret, token, now int64) op {
		return op{Kind: kindAcquire, Owner: owner, TTLms: 1000, Call: call, Return: ret, Outcome: outGranted, Token: token, AcquiredAt: now, ExpiresAt: now + 1000}
	}
	unknown := func(owner string, call, ret int64) op {
		return op{Kind: kindAcquire, Owner: owner, TTLms: 1000, Call: call, Return: ret, Outcome: outUnknown}
	}
	notGranted := func(owner string, call, ret int64) op {
		return op{Kind: kindAcquire, Owner: owner, TTLms: 1000, Call: call, Return: ret, Outcome: outNotGranted}
	}
	tests := []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"a grant after the holder's lease expired is legal", []op{
			grant("a", 0, 1, 10, 5000),
			grant("b", 2*s, 2*s+1, 11, 6000),
		}, porcupine.Ok},
		{"a grant while another owner's lease is unexpired by the Redis clock is illegal", []op{
			grant("a", 0, 1, 10, 5000),
			grant("b", 2, 3, 11, 5500),
		}, porcupine.Illegal},
		{"a new holder's token below an earlier one is illegal", []op{
			grant("a", 0, 1, 10, 5000),
			grant("b", 2*s, 2*s+1, 9, 6000),
		}, porcupine.Illegal},
		{"a grant after a release is legal", []op{
			grant("a", 0, 1, 10, 5000),
			{Kind: kindRelease, Owner: "a", ReqToken: 10, Call: 2, Return: 3, Outcome: outOK},
			grant("b", 4, 5, 11, 5100),
		}, porcupine.Ok},
		{"a renewal keeps the lease from another owner", []op{
			grant("a", 0, 1, 10, 5000),
			{Kind: kindRenew, Owner: "a", ReqToken: 10, TTLms: 1000, Call: 2, Return: 3, Outcome: outOK, Token: 10, ExpiresAt: 5900 + 1000},
			grant("b", 4, 5, 11, 6100),
		}, porcupine.Illegal},
		{"an acquire of unknown outcome may not have happened", []op{
			unknown("a", 0, 1),
			grant("b", 2, 3, 11, 5100),
		}, porcupine.Ok},
		{"an acquire of unknown outcome may have happened", []op{
			unknown("a", 0, 1),
			notGranted("b", 2, 3),
		}, porcupine.Ok},
		{"not-granted with nobody holding the lock is illegal", []op{
			notGranted("b", 0, 1),
		}, porcupine.Illegal},
		{"a waiting acquire that ran out without the lock observes nothing", []op{
			{Kind: kindAcquire, Owner: "b", TTLms: 1000, WaitMs: 500, Call: 0, Return: 1, Outcome: outNotGranted},
		}, porcupine.Ok},
		{"a 404 proves the lease expired, so no decision comes before its expiry", []op{
			grant("a", 0, 1, 10, 5000),
			{Kind: kindRenew, Owner: "a", ReqToken: 10, TTLms: 1000, Call: 2, Return: 3, Outcome: outNotFound},
			grant("b", 4, 5, 11, 5500),
		}, porcupine.Illegal},
		{"a 403 to the holder itself is illegal", []op{
			grant("a", 0, 1, 10, 5000),
			{Kind: kindRelease, Owner: "a", ReqToken: 10, Call: 2, Return: 3, Outcome: outForbidden},
		}, porcupine.Illegal},
	}
	model := leaseModel.ToModel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(model, porcupineOps(tt.ops), 5*time.Second); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
