package handlers_test

import (
	"testing"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/handlers"
)

func TestLoneSurrogatesInABanReasonAreRefused(t *testing.T) {
	t.Parallel()
	env := newAbuseEnv(t, abuse.DefaultPolicies())
	for name, s := range handlers.LoneSurrogates {
		t.Run(name, func(t *testing.T) {
			env.Do(t, "POST", "/abuse/bans/u1", `{"seconds":60,"reason":"`+s+`"}`).Want(t, 422).Fields(t, "reason")
		})
	}
	t.Run("nobody was banned", func(t *testing.T) {
		env.Do(t, "POST", "/user-locks/login/u1", "").Want(t, 200)
	})
	t.Run("a surrogate pair in a reason is fine", func(t *testing.T) {
		m := env.Do(t, "POST", "/abuse/bans/u2", `{"seconds":60,"reason":"spam \ud83d\ude00"}`).Want(t, 201).Map(t)
		if got := m["reason"]; got != "spam 😀" {
			t.Errorf("got reason %v, want spam 😀", got)
		}
	})
}
