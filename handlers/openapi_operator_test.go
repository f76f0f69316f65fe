package handlers_test

import "testing"

// The operator routes of the spec scenario (docs/api.md, "Seeing and
// acting on locks").
var specOperatorRoutes = []specCase{
	{name: "a lock to list is acquired", method: "POST", target: "/locks/jobs%2Fnightly", key: keyClient, body: `{"owner":"worker-1","ttl_seconds":60}`, status: 200},
	{name: "an ops key lists the tenant's live leases", method: "GET", target: "/locks?prefix=jobs&limit=10", key: keyOps, status: 200},
	{name: "a listing page with a cursor is 200", method: "GET", target: "/locks?cursor=jobs%2Fnightly", key: keyOps, status: 200},
	{name: "a client key may not list", method: "GET", target: "/locks", key: keyClient, status: 403},
	{name: "a listing limit over 1000 is 422", method: "GET", target: "/locks?limit=1001", key: keyOps, status: 422, specRejects: true},
	{name: "an unknown listing parameter is 422", method: "GET", target: "/locks?owner=x", key: keyOps, status: 422},
	{name: "a client key may not force a release", method: "DELETE", target: "/locks/jobs%2Fnightly?force=true", key: keyClient, body: `{"reason":"stuck"}`, status: 403},
	{name: "a forced release without a reason is 422", method: "DELETE", target: "/locks/jobs%2Fnightly?force=true", key: keyOps, status: 422},
	{name: "a forced release with an empty reason is 422", method: "DELETE", target: "/locks/jobs%2Fnightly?force=true", key: keyOps, body: `{"reason":""}`, status: 422, specRejects: true},
	{name: "an ops key force-releases with a reason: 200 and the lease", method: "DELETE", target: "/locks/jobs%2Fnightly?force=true", key: keyOps, body: `{"reason":"worker-1 is wedged"}`, status: 200},
	{name: "the former holder's renew is 404", method: "POST", target: "/locks/jobs%2Fnightly/renew", key: keyClient, body: `{"owner":"worker-1","ttl_seconds":60}`, status: 404},
	{name: "forcing the release of nothing is 404", method: "DELETE", target: "/locks/jobs%2Fnightly?force=true&reason=again", key: keyOps, status: 404},
	{name: "an ops key reads the audit trail", method: "GET", target: "/audit?limit=5", key: keyOps, status: 200},
	{name: "a client key may not read the audit trail", method: "GET", target: "/audit", key: keyClient, status: 403},
	{name: "an audit cursor that is none is 422", method: "GET", target: "/audit?cursor=nope", key: keyOps, status: 422},
	// Last: on a real redis-server this loses the data.
	{name: "a listing while Redis is down is 503", method: "GET", target: "/locks", key: keyOps, status: 503, redisDown: true},
}

func TestOperatorRoutesAnswerAsOpenAPISays(t *testing.T) {
	t.Parallel()
	runSpecCases(t, newSpecGateway(t), specOperatorRoutes)
}

func TestOperatorRoutesAnswerAsOpenAPISaysOnRealRedis(t *testing.T) {
	t.Parallel()
	runSpecCases(t, newSpecGatewayOnRealRedis(t), specOperatorRoutes)
}
