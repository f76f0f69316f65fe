package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/leasegate/leasegate/bench"
)

// The primitives phases (-primitives), over HTTP to the lock phase's
// gateway, each client on names of its own so that every acquire is
// granted, as in the lock phase:
//
//	sem    POST /semaphores/{n} (limit 10) + DELETE /semaphores/{n}
//	claim  POST /claims/{scope}/{key} + POST /claims/{scope}/{key}/complete
//	       (a new key every cycle, result {"ok":true}, keep 1 s)
//
// and, for -capacity only (capacity.go):
//
//	election  POST /elections/{n}/campaign + DELETE /elections/{n}
//
// Sem and claim are two requests, two script round trips, so their floor
// is the round's lock floor (SET NX PX + compare-and-delete), as in
// semaphore/bench_test.go's BenchmarkCyclesAgainstTheGoRedisFloor.

// semaphoreLimit is the limit of every benchmark semaphore.
const semaphoreLimit = 10

func newSemaphoreCycle(g *bench.Gateway, cfg Config, runID string) *bench.HTTPCycle {
	return g.Cycle(cfg.Config, "sem", "/semaphores/bench-"+runID+"-", false, `,"limit":`+strconv.Itoa(semaphoreLimit))
}

type claimCycle struct {
	hc     *http.Client
	base   []string // per worker: .../claims/{scope}/w{i}-
	owners []string
	claims [][]byte
	// Per worker: the sequence number of its current key and the token
	// of its pending claim.
	seq    []int
	tokens []int64
}

func newClaimCycle(g *bench.Gateway, cfg Config, runID string) *claimCycle {
	c := &claimCycle{
		hc:     g.Client(),
		seq:    make([]int, cfg.Concurrency),
		tokens: make([]int64, cfg.Concurrency),
	}
	base := g.URL() + "/claims/bench-" + runID + "/w"
	for i := range cfg.Concurrency {
		c.base = append(c.base, base+strconv.Itoa(i)+"-")
		c.owners = append(c.owners, bench.Owner(i))
	}
	c.claims, _ = bench.OwnerBodies(cfg.Config, "")
	return c
}

func (c *claimCycle) Name() string    { return "claim" }
func (c *claimCycle) Sends() []string { return []string{"evalsha", "eval"} }

func (c *claimCycle) url(i int) string { return c.base[i] + strconv.Itoa(c.seq[i]) }

// acquire claims a new key: 201, state pending.
func (c *claimCycle) Acquire(ctx context.Context, i int) error {
	c.seq[i]++
	body, err := bench.DoJSON(ctx, c.hc, http.MethodPost, c.url(i), c.claims[i], http.StatusCreated)
	if err != nil {
		return err
	}
	c.tokens[i], err = intField(body, "token")
	return err
}

// intField reads the first JSON number field named name in body (a
// reply of the gateway: a token, a term).
func intField(body []byte, name string) (int64, error) {
	field := []byte(`"` + name + `":`)
	j := bytes.Index(body, field)
	if j < 0 {
		return 0, fmt.Errorf("no %s in %s", name, body)
	}
	rest := body[j+len(field):]
	end := bytes.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s in %s: %w", name, body, err)
	}
	return n, nil
}

var claimDone = []byte(`"state":"done"`)

// release completes the claim acquire took.
func (c *claimCycle) Release(ctx context.Context, i int) error {
	body := []byte(`{"owner":"` + c.owners[i] + `","token":` + strconv.FormatInt(c.tokens[i], 10) + `,"result":{"ok":true},"keep_seconds":1}`)
	got, err := bench.DoJSON(ctx, c.hc, http.MethodPost, c.url(i)+"/complete", body, http.StatusOK)
	if err != nil {
		return err
	}
	if !bytes.Contains(got, claimDone) {
		return errors.New("complete: not done: " + string(got))
	}
	return nil
}

// electionCycle: worker i campaigns for an election of its own (POST
// /elections/{n}/campaign, elected at once) and resigns (DELETE
// /elections/{n} with the term it won).
type electionCycle struct {
	hc       *http.Client
	urls     []string
	campaign [][]byte
	owners   []string
	terms    []int64
}

func newElectionCycle(hc *http.Client, urls []string, cfg Config) *electionCycle {
	c := &electionCycle{hc: hc, urls: urls, terms: make([]int64, len(urls))}
	ttl := strconv.Itoa(int(cfg.TTL / time.Second))
	for i := range urls {
		c.owners = append(c.owners, bench.Owner(i))
		c.campaign = append(c.campaign, []byte(`{"candidate":"`+bench.Owner(i)+`","ttl_seconds":`+ttl+`}`))
	}
	return c
}

func (c *electionCycle) Name() string    { return "election" }
func (c *electionCycle) Sends() []string { return []string{"evalsha", "eval"} }

var elected = []byte(`"leader":true`)

func (c *electionCycle) Acquire(ctx context.Context, i int) error {
	body, err := bench.DoJSON(ctx, c.hc, http.MethodPost, c.urls[i]+"/campaign", c.campaign[i], http.StatusOK)
	if err != nil {
		return err
	}
	if !bytes.Contains(body, elected) {
		return fmt.Errorf("campaign: not elected: %s", body)
	}
	c.terms[i], err = intField(body, "term")
	return err
}

func (c *electionCycle) Release(ctx context.Context, i int) error {
	body := `{"candidate":"` + c.owners[i] + `","term":` + strconv.FormatInt(c.terms[i], 10) + `}`
	_, err := bench.DoJSON(ctx, c.hc, http.MethodDelete, c.urls[i], []byte(body), http.StatusNoContent)
	return err
}
