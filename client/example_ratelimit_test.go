package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasegate/leasegate/client"
)

// Every user-lock answer carries the IETF RateLimit header fields; the
// client reads them into UserLock.RateLimit (and Error.RateLimit for a
// ban), so a caller can slow down before it is flagged.
func ExampleUserLock_rateLimit() {
	base, stop := exampleGateway()
	defer stop()
	ctx := context.Background()
	c := client.New(base)
	for i := 0; i < 5; i++ {
		res, err := c.UserLock(ctx, "login", "user-7", time.Minute)
		if err != nil {
			fmt.Println(err)
			return
		}
		rl := res.RateLimit
		fmt.Printf("attempt %d: policy %s, %d per %v, %d left\n", res.Attempts, rl.Policy, rl.Quota, rl.Window, rl.Remaining)
	}
	if _, err := c.BanUser(ctx, "user-7", time.Hour, "scripted logins"); err != nil {
		fmt.Println(err)
		return
	}
	_, err := c.UserLock(ctx, "login", "user-7", time.Minute)
	var ce *client.Error
	if errors.As(err, &ce) && ce.RateLimit != nil {
		fmt.Printf("banned: %d left, reset in %v\n", ce.RateLimit.Remaining, ce.RateLimit.Reset)
	}
	// Output:
	// attempt 1: policy login, 5 per 1m0s, 4 left
	// attempt 2: policy login, 5 per 1m0s, 3 left
	// attempt 3: policy login, 5 per 1m0s, 2 left
	// attempt 4: policy login, 5 per 1m0s, 1 left
	// attempt 5: policy login, 5 per 1m0s, 0 left
	// banned: 0 left, reset in 1h0m0s
}
