package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/leasegate/leasegate/bench"
)

// The lock-set phase (-locksets): each client takes a set of
// lockSetSize resources of its own (POST /locks) and releases it
// (DELETE /locks), over HTTP to the lock phase's gateway, so every set
// is granted as every single lock is in the gateway phase. It is
// compared with that phase of the same round: the report's "proc cpu"
// of both (this process: the HTTP driver and the gateway) per cycle is
// what docs/benchmarks.md ("Lock sets") compares.

// lockSetSize is how many resources each benchmark set names.
const lockSetSize = 8

type lockSetCycle struct {
	hc       *http.Client
	urls     []string // per worker
	acquires [][]byte
	releases [][]byte
}

// newLockSetCycle: worker i sends its sets to bases[i%len(bases)] (a
// gateway's http://host:port) with hc.
func newLockSetCycle(hc *http.Client, bases []string, cfg Config, runID string) *lockSetCycle {
	c := &lockSetCycle{hc: hc}
	ttl := strconv.FormatInt(int64(cfg.TTL.Seconds()), 10)
	for i := range cfg.Concurrency {
		names := make([]string, lockSetSize)
		for j := range names {
			names[j] = `"set-` + runID + "-" + strconv.Itoa(i) + "-" + strconv.Itoa(j) + `"`
		}
		list := "[" + strings.Join(names, ",") + "]"
		owner := bench.Owner(i)
		c.acquires = append(c.acquires, []byte(`{"resources":`+list+`,"owner":"`+owner+`","ttl_seconds":`+ttl+`}`))
		c.releases = append(c.releases, []byte(`{"resources":`+list+`,"owner":"`+owner+`"}`))
		c.urls = append(c.urls, bases[i%len(bases)]+"/locks")
	}
	return c
}

func (c *lockSetCycle) Name() string    { return "set" + strconv.Itoa(lockSetSize) }
func (c *lockSetCycle) Sends() []string { return []string{"evalsha", "eval"} }

func (c *lockSetCycle) Acquire(ctx context.Context, i int) error {
	got, err := bench.DoJSON(ctx, c.hc, http.MethodPost, c.urls[i], c.acquires[i], http.StatusOK)
	if err != nil {
		return err
	}
	if !bench.Granted(got) {
		return fmt.Errorf("lock set acquire: not granted: %s", got)
	}
	return nil
}

func (c *lockSetCycle) Release(ctx context.Context, i int) error {
	_, err := bench.DoJSON(ctx, c.hc, http.MethodDelete, c.urls[i], c.releases[i], http.StatusOK)
	return err
}
