package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/server"
)

// exampleGateway runs the whole gateway (server.New: locks, user locks,
// bans and their abuse log) on its embedded in-memory Redis for the
// examples.
func exampleGateway() (baseURL string, stop func()) {
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.AbuseLog = io.Discard
	srv, err := server.New(cfg, nil)
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve() }()
	return "http://" + srv.Addr(), func() { _ = srv.Shutdown(context.Background()) }
}

func ExampleClient_Acquire() {
	base, stop := exampleGateway()
	defer stop()
	c := client.New(base) // client.WithAPIKey(key) when the gateway has keys
	ctx := context.Background()

	lease, err := c.Acquire(ctx, "daily-report", 30*time.Second, client.WithOwner("node-a"))
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("held by", lease.Owner, "with a fencing token:", lease.Token > 0)

	// Another owner is told to retry later: not an HTTP error.
	_, err = c.Acquire(ctx, "daily-report", 30*time.Second, client.WithOwner("node-b"))
	var na *client.NotAcquiredError
	if errors.As(err, &na) {
		fmt.Println("node-b not acquired; retry within 30s:", na.RetryAfter <= 30*time.Second)
	}

	fmt.Println("release:", c.Release(ctx, lease))
	// Output:
	// held by node-a with a fencing token: true
	// node-b not acquired; retry within 30s: true
	// release: <nil>
}

func ExampleWithWait() {
	base, stop := exampleGateway()
	defer stop()
	c := client.New(base)
	ctx := context.Background()

	first, _ := c.Acquire(ctx, "nightly-cron", time.Minute)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = c.Release(ctx, first)
	}()
	// Waits (on the gateway) for the release instead of polling.
	second, err := c.Acquire(ctx, "nightly-cron", time.Minute, client.WithWait(5*time.Second))
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("got it after the release; newer token:", second.Token > first.Token)
	// Output:
	// got it after the release; newer token: true
}

func ExampleClient_KeepAlive() {
	base, stop := exampleGateway()
	defer stop()
	c := client.New(base)
	ctx := context.Background()

	lease, err := c.Acquire(ctx, "reindex", time.Second)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	k := c.KeepAlive(ctx, lease) // renews every TTL/3

	// Do the work under k.Context(): it ends, with the reason as its
	// cause, as soon as the lease is lost.
	work := k.Context()
	select {
	case <-work.Done():
		fmt.Println("lost:", context.Cause(work))
		return
	case <-time.After(1500 * time.Millisecond): // longer than the 1s TTL
	}
	fmt.Println("still held after 1.5s:", k.Err() == nil)

	k.Stop()
	fmt.Println("release:", c.Release(ctx, lease))
	// Output:
	// still held after 1.5s: true
	// release: <nil>
}
