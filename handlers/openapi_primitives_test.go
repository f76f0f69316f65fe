package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/keyspace"
)

// The semaphore and claim routes of the spec scenario. "{token}" in a
// case with claimToken set is the token stored in that claim (read from
// Redis), so a case can complete or abandon what an earlier case claimed.
type primitiveCase struct {
	specCase
	claimToken string // "scope/key"
}

var specPrimitiveRoutes = []primitiveCase{
	{specCase: specCase{name: "a first permit is granted", method: "POST", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w1","ttl_seconds":30,"limit":2}`, status: 200}},
	{specCase: specCase{name: "a second permit is granted", method: "POST", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w2","ttl_seconds":30,"limit":2}`, status: 200}},
	{specCase: specCase{name: "a full semaphore answers acquired false", method: "POST", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w3","ttl_seconds":30,"limit":2,"wait_ms":0}`, status: 200}},
	{specCase: specCase{name: "another limit while permits are held is 409 limit-mismatch", method: "POST", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w3","ttl_seconds":30,"limit":3}`, status: 409}},
	{specCase: specCase{name: "a semaphore's status lists its permits", method: "GET", target: "/semaphores/provider", key: keyClient, status: 200}},
	{specCase: specCase{name: "renewing a permit is 200", method: "POST", target: "/semaphores/provider/renew", key: keyClient, body: `{"owner":"w1","ttl_seconds":60}`, status: 200}},
	{specCase: specCase{name: "renewing another owner's permit is 403", method: "POST", target: "/semaphores/provider/renew", key: keyClient, body: `{"owner":"w9","ttl_seconds":60}`, status: 403}},
	{specCase: specCase{name: "releasing another owner's permit is 403", method: "DELETE", target: "/semaphores/provider?owner=w9", key: keyClient, status: 403}},
	{specCase: specCase{name: "releasing a permit is 204", method: "DELETE", target: "/semaphores/provider?owner=w1", key: keyClient, status: 204}},
	{specCase: specCase{name: "releasing a permit in the body is 204", method: "DELETE", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w2"}`, status: 204}},
	{specCase: specCase{name: "releasing on an empty semaphore is 404", method: "DELETE", target: "/semaphores/provider?owner=w1", key: keyClient, status: 404}},
	{specCase: specCase{name: "the status of an empty semaphore is 404", method: "GET", target: "/semaphores/provider", key: keyClient, status: 404}},
	{specCase: specCase{name: "a permit without a limit is 422", method: "POST", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w1","ttl_seconds":30}`, status: 422, specRejects: true}},
	{specCase: specCase{name: "a limit over 10000 is 422", method: "POST", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w1","ttl_seconds":30,"limit":10001}`, status: 422, specRejects: true}},
	{specCase: specCase{name: "a semaphore name with a control character is 422", method: "POST", target: "/semaphores/a%01b", key: keyClient, body: `{"owner":"w1","ttl_seconds":30,"limit":1}`, status: 422, specRejects: true}},
	{specCase: specCase{name: "a semaphore acquire while Redis is down is 503", method: "POST", target: "/semaphores/provider", key: keyClient, body: `{"owner":"w1","ttl_seconds":30,"limit":1}`, status: 503, redisDown: true}},

	{specCase: specCase{name: "a first claim is 201 pending", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01", key: keyClient, body: `{"owner":"w1","ttl_seconds":30}`, status: 201}},
	{specCase: specCase{name: "the same owner's claim again is 200 pending", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01", key: keyClient, body: `{"owner":"w1","ttl_seconds":30}`, status: 200}},
	{specCase: specCase{name: "another owner's claim is 409 claim-in-progress with Retry-After", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01", key: keyClient, body: `{"owner":"w2","ttl_seconds":30}`, status: 409}},
	{specCase: specCase{name: "a pending claim's status is 200", method: "GET", target: "/claims/daily-checkin/user-42%3A2026-12-01", key: keyClient, status: 200}},
	{specCase: specCase{name: "completing under another token is 403", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01/complete", key: keyClient, body: `{"owner":"w1","token":1,"result":1}`, status: 403}},
	{specCase: specCase{name: "completing without a result is 422", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01/complete", key: keyClient, body: `{"owner":"w1","token":1}`, status: 422, specRejects: true}},
	{specCase: specCase{name: "completing with keep_seconds over a year is 422", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01/complete", key: keyClient, body: `{"owner":"w1","token":1,"result":1,"keep_seconds":31536001}`, status: 422, specRejects: true}},
	{specCase: specCase{name: "completing with a result over 8 KiB is 422", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01/complete", key: keyClient, body: `{"owner":"w1","token":1,"result":"` + strings.Repeat("x", 8191) + `"}`, status: 422}},
	{specCase: specCase{name: "completing by the holder is 200 done", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01/complete", key: keyClient, body: `{"owner":"w1","token":{token},"result":{"coins": 10},"keep_seconds":3600}`, status: 200}, claimToken: "daily-checkin/user-42:2026-12-01"},
	{specCase: specCase{name: "completing again with the same token and result is 200", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01/complete", key: keyClient, body: `{"owner":"w1","token":{token},"result":{"coins": 10}}`, status: 200}, claimToken: "daily-checkin/user-42:2026-12-01"},
	{specCase: specCase{name: "a claim that is done answers 200 done", method: "POST", target: "/claims/daily-checkin/user-42%3A2026-12-01", key: keyClient, body: `{"owner":"w2","ttl_seconds":30}`, status: 200}},
	{specCase: specCase{name: "a done claim's status is 200", method: "GET", target: "/claims/daily-checkin/user-42%3A2026-12-01", key: keyClient, status: 200}},
	{specCase: specCase{name: "abandoning a done claim is 403", method: "DELETE", target: "/claims/daily-checkin/user-42%3A2026-12-01?owner=w1&token={token}", key: keyClient, status: 403}, claimToken: "daily-checkin/user-42:2026-12-01"},
	{specCase: specCase{name: "forcing a removal with a client key is 403", method: "DELETE", target: "/claims/daily-checkin/user-42%3A2026-12-01?force=true&reason=test", key: keyClient, status: 403}},
	{specCase: specCase{name: "forcing a removal without a reason is 422", method: "DELETE", target: "/claims/daily-checkin/user-42%3A2026-12-01?force=true", key: keyOps, status: 422}},
	{specCase: specCase{name: "forcing the removal of a done claim with an ops key is 204", method: "DELETE", target: "/claims/daily-checkin/user-42%3A2026-12-01?force=true&reason=paid+twice", key: keyOps, status: 204}},
	{specCase: specCase{name: "a removed claim's status is 404", method: "GET", target: "/claims/daily-checkin/user-42%3A2026-12-01", key: keyClient, status: 404}},
	{specCase: specCase{name: "a claim to abandon is 201", method: "POST", target: "/claims/reward/order-7", key: keyClient, body: `{"owner":"w1","ttl_seconds":30}`, status: 201}},
	{specCase: specCase{name: "abandoning without a token is 422", method: "DELETE", target: "/claims/reward/order-7?owner=w1", key: keyClient, status: 422}},
	{specCase: specCase{name: "abandoning by the holder is 204", method: "DELETE", target: "/claims/reward/order-7", key: keyClient, body: `{"owner":"w1","token":{token}}`, status: 204}, claimToken: "reward/order-7"},
	{specCase: specCase{name: "abandoning again is 404", method: "DELETE", target: "/claims/reward/order-7?owner=w1&token=1", key: keyClient, status: 404}},
	{specCase: specCase{name: "a claim with a bad scope is 422", method: "POST", target: "/claims/bad%20scope/k", key: keyClient, body: `{"owner":"w1","ttl_seconds":30}`, status: 422, specRejects: true}},
	{specCase: specCase{name: "a claim while Redis is down is 503", method: "POST", target: "/claims/reward/order-8", key: keyClient, body: `{"owner":"w1","ttl_seconds":30}`, status: 503, redisDown: true}},
}

func TestPrimitiveRoutesAnswerAsOpenAPISays(t *testing.T) {
	t.Parallel()
	runPrimitiveCases(t, newSpecGateway(t))
}

func TestPrimitiveRoutesAnswerAsOpenAPISaysOnRealRedis(t *testing.T) {
	t.Parallel()
	runPrimitiveCases(t, newSpecGatewayOnRealRedis(t))
}

func runPrimitiveCases(t *testing.T, g *specGateway) {
	t.Helper()
	for _, c := range specPrimitiveRoutes {
		var token int64
		if c.claimToken != "" {
			scope, key, _ := strings.Cut(c.claimToken, "/")
			k := keyspace.Space{Prefix: "spec:"}.Claim(specTenant, scope, key)
			n, err := g.Backend.RDB.HGet(context.Background(), k, "token").Int64()
			if err != nil {
				t.Fatalf("reading the token of %s: %v", k, err)
			}
			token = n
		}
		if !t.Run(c.name, func(t *testing.T) { g.run(t, c.specCase, &token) }) {
			return
		}
	}
}
