package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
)

// A user lock counts repeated attempts; the fifth flags the user, an
// operator bans them, and the next attempt is refused with Retry-After.
func ExampleClient_UserLock() {
	base, stop := exampleGateway()
	defer stop()
	ctx := context.Background()
	c := client.New(base)
	for i := 0; i < 5; i++ {
		res, err := c.UserLock(ctx, "password-reset", "user-42", time.Minute)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("attempt %d: acquired=%v flagged=%v\n", res.Attempts, res.Acquired, res.Flagged)
	}
	if _, err := c.BanUser(ctx, "user-42", time.Hour, "too many resets"); err != nil {
		fmt.Println(err)
		return
	}
	_, err := c.UserLock(ctx, "password-reset", "user-42", time.Minute)
	var ce *client.Error
	if errors.Is(err, leasegate.ErrBanned) && errors.As(err, &ce) {
		fmt.Println("banned, retry after", ce.RetryAfter)
	}
	// Output:
	// attempt 1: acquired=true flagged=false
	// attempt 2: acquired=false flagged=false
	// attempt 3: acquired=false flagged=false
	// attempt 4: acquired=false flagged=false
	// attempt 5: acquired=false flagged=true
	// banned, retry after 1h0m0s
}
