package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leasegate/leasegate/client"
)

// fencedStore is a downstream store that keeps the highest fencing token
// it has seen per key and refuses writes that carry a lower one. The check
// and the write happen under one lock (in SQL: one conditional UPDATE).
type fencedStore struct {
	mu      sync.Mutex
	highest map[string]int64
	value   map[string]string
}

var errStaleToken = errors.New("store: stale fencing token")

func (s *fencedStore) Put(key, value string, token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest[key] {
		return fmt.Errorf("%w: %d < %d", errStaleToken, token, s.highest[key])
	}
	s.highest[key] = token
	s.value[key] = value
	return nil
}

// A holder that pauses past its lease (GC, VM stall, slow network) and
// then writes is refused, because the next holder's token is higher.
func Example_fencingTokens() {
	base, stop := exampleGateway()
	defer stop()
	c := client.New(base)
	ctx := context.Background()
	store := &fencedStore{highest: map[string]int64{}, value: map[string]string{}}

	a, _ := c.Acquire(ctx, "balance/42", time.Second, client.WithOwner("worker-a"))
	time.Sleep(1100 * time.Millisecond) // worker-a stalls; its lease expires

	b, _ := c.Acquire(ctx, "balance/42", time.Second, client.WithOwner("worker-b"))
	fmt.Println("b's token is higher:", b.Token > a.Token)
	fmt.Println("b writes:", store.Put("balance/42", "100", b.Token))

	// worker-a wakes up, still believing it holds the lock.
	err := store.Put("balance/42", "90", a.Token)
	fmt.Println("a's late write refused:", errors.Is(err, errStaleToken))
	fmt.Println("value:", store.value["balance/42"])
	// Output:
	// b's token is higher: true
	// b writes: <nil>
	// a's late write refused: true
	// value: 100
}
