package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
)

func ExampleClient_Lead() {
	base, stop := exampleGateway()
	defer stop()
	c := client.New(base)
	ctx := context.Background()

	req := leasegate.CampaignRequest{Name: "nightly-report", Candidate: "node-a", Value: "10.0.0.1:8080", TTL: 30 * time.Second}
	ld, keep, err := c.Lead(ctx, req)
	if err != nil {
		fmt.Println("campaign:", err)
		return
	}
	fmt.Println("node-a leads with a term:", ld.Term > 0)

	// Another node is told who leads; it does not run the job.
	req.Candidate = "node-b"
	_, err = c.Campaign(ctx, req)
	var ne *client.NotElectedError
	if errors.As(err, &ne) {
		fmt.Println("node-b not elected; the leader is", ne.Current.Candidate, "at", ne.Current.Value)
	}

	// Anyone reads the leader.
	cur, _ := c.Leader(ctx, "nightly-report")
	fmt.Println("leader:", cur.Candidate, cur.Value)

	// The job runs under keep.Context(), which ends if the leadership is
	// lost; when it is done, stop renewing and resign.
	keep.Stop()
	fmt.Println("resign:", c.Resign(ctx, ld))
	_, err = c.Leader(ctx, "nightly-report")
	fmt.Println("no leader:", errors.Is(err, leasegate.ErrNoLeader))
	// Output:
	// node-a leads with a term: true
	// node-b not elected; the leader is node-a at 10.0.0.1:8080
	// leader: node-a 10.0.0.1:8080
	// resign: <nil>
	// no leader: true
}
