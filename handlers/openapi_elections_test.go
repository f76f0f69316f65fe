package handlers_test

import (
	"strings"
	"testing"
)

// The election routes of the spec scenario (docs/elections.md). "{token}"
// is the term of the last leadership an answer showed.
var specElectionRoutes = []specCase{
	{name: "a first campaign is elected", method: "POST", target: "/elections/nightly-report/campaign", key: keyClient, body: `{"candidate":"node-a","value":"10.0.0.1:8080","ttl_seconds":30}`, status: 200},
	{name: "the leader is readable", method: "GET", target: "/elections/nightly-report", key: keyClient, status: 200},
	{name: "the leader campaigning again renews", method: "POST", target: "/elections/nightly-report/campaign", key: keyClient, body: `{"candidate":"node-a","value":"10.0.0.1:8080","ttl_seconds":30,"wait_ms":0,"lock_delay_ms":0}`, status: 200},
	{name: "a rival campaign answers leader false with the current leader", method: "POST", target: "/elections/nightly-report/campaign", key: keyClient, body: `{"candidate":"node-b","ttl_seconds":30}`, status: 200},
	{name: "the leader proclaims a new value", method: "POST", target: "/elections/nightly-report/proclaim", key: keyClient, body: `{"candidate":"node-a","term":{token},"value":"10.0.0.2:8080"}`, status: 200},
	{name: "a proclaim under another term is 404", method: "POST", target: "/elections/nightly-report/proclaim", key: keyClient, body: `{"candidate":"node-a","term":1,"value":"x"}`, status: 404},
	{name: "a proclaim without a value is 422", method: "POST", target: "/elections/nightly-report/proclaim", key: keyClient, body: `{"candidate":"node-a","term":1}`, status: 422, specRejects: true},
	{name: "a campaign with a value over 4096 bytes is 422", method: "POST", target: "/elections/nightly-report/campaign", key: keyClient, body: `{"candidate":"node-a","ttl_seconds":30,"value":"` + strings.Repeat("v", 4097) + `"}`, status: 422, specRejects: true},
	{name: "a campaign without a candidate is 422", method: "POST", target: "/elections/nightly-report/campaign", key: keyClient, body: `{"ttl_seconds":30}`, status: 422, specRejects: true},
	{name: "a campaign with a lock delay over 60000 ms is 422", method: "POST", target: "/elections/nightly-report/campaign", key: keyClient, body: `{"candidate":"node-a","ttl_seconds":30,"lock_delay_ms":60001}`, status: 422, specRejects: true},
	{name: "an election name with a control character is 422", method: "GET", target: "/elections/a%01b", key: keyClient, status: 422, specRejects: true},
	{name: "an ops key lists the elections", method: "GET", target: "/locks?kind=elections&prefix=nightly", key: keyOps, status: 200},
	{name: "an unknown listing kind is 422", method: "GET", target: "/locks?kind=queues", key: keyOps, status: 422, specRejects: true},
	{name: "a resignation by another candidate is 404", method: "DELETE", target: "/elections/nightly-report", key: keyClient, body: `{"candidate":"node-b","term":{token}}`, status: 404},
	{name: "the leader resigns", method: "DELETE", target: "/elections/nightly-report", key: keyClient, body: `{"candidate":"node-a","term":{token}}`, status: 204},
	{name: "a resignation without a term is 422", method: "DELETE", target: "/elections/nightly-report", key: keyClient, body: `{"candidate":"node-a"}`, status: 422, specRejects: true},
	{name: "an election without a leader is 404", method: "GET", target: "/elections/nightly-report", key: keyClient, status: 404},
	{name: "a campaign while Redis is down is 503", method: "POST", target: "/elections/nightly-report/campaign", key: keyClient, body: `{"candidate":"node-a","ttl_seconds":30}`, status: 503, redisDown: true},
}

func TestElectionRoutesAnswerAsOpenAPISays(t *testing.T) {
	t.Parallel()
	runSpecCases(t, newSpecGateway(t), specElectionRoutes)
}

func TestElectionRoutesAnswerAsOpenAPISaysOnRealRedis(t *testing.T) {
	t.Parallel()
	runSpecCases(t, newSpecGatewayOnRealRedis(t), specElectionRoutes)
}
