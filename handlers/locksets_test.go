package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

type setAnswerJSON struct {
	Acquired bool       `json:"acquired"`
	Locks    []lockJSON `json:"locks"`
	Held     []struct {
		Resource     string `json:"resource"`
		RetryAfterMS int64  `json:"retry_after_ms"`
	} `json:"held"`
}

func TestLockSetRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	t.Run("a free set answers a lock per member", func(t *testing.T) {
		var got setAnswerJSON
		h.Do(t, http.MethodPost, "/locks", `{"resources":["a","b"],"owner":"svc-a","ttl_seconds":30}`).JSON(t, http.StatusOK, &got)
		if !got.Acquired || len(got.Locks) != 2 || got.Locks[0].Resource != "a" || got.Locks[1].Resource != "b" ||
			got.Locks[0].Token <= 0 || got.Locks[1].Token <= 0 || got.Locks[0].ExpiresAt != "2026-11-30T09:30:30.000Z" {
			t.Errorf("got %+v, want svc-a's leases on a and b", got)
		}
		if lk := h.status(t, "b"); lk == nil || lk.Owner != "svc-a" {
			t.Errorf("got status %+v, want b held by svc-a", lk)
		}
	})

	t.Run("a held member refuses the set with its retry_after_ms", func(t *testing.T) {
		h.Backend.Advance(t, 10e9)
		var got setAnswerJSON
		h.Do(t, http.MethodPost, "/locks", `{"resources":["c","b"],"owner":"svc-b","ttl_seconds":30}`).JSON(t, http.StatusOK, &got)
		if got.Acquired || got.Locks != nil || len(got.Held) != 1 || got.Held[0].Resource != "b" || got.Held[0].RetryAfterMS != 20000 {
			t.Errorf("got %+v, want refused by b, retry_after_ms 20000", got)
		}
		if lk := h.status(t, "c"); lk != nil {
			t.Errorf("got c %+v, want free (none taken)", lk)
		}
	})

	t.Run("DELETE /locks names released and not held members", func(t *testing.T) {
		res := h.Do(t, http.MethodDelete, "/locks", `{"owner":"svc-a","resources":["a","b","c"]}`)
		var got struct {
			Released []string `json:"released"`
			NotHeld  []string `json:"not_held"`
		}
		res.JSON(t, http.StatusOK, &got)
		if fmt.Sprint(got.Released) != "[a b]" || fmt.Sprint(got.NotHeld) != "[c]" {
			t.Errorf("got %+v, want released [a b], not_held [c]", got)
		}
	})

	t.Run("bad sets are 422s naming the field, and change nothing", func(t *testing.T) {
		many := `"r0"` + strings.Repeat(`,"r"`, 0)
		for i := 1; i <= 64; i++ {
			many += fmt.Sprintf(`,"r%d"`, i)
		}
		for body, field := range map[string]string{
			`{"owner":"svc-a","ttl_seconds":30}`:                                         "resources",
			`{"resources":[],"owner":"svc-a","ttl_seconds":30}`:                          "resources",
			`{"resources":"a","owner":"svc-a","ttl_seconds":30}`:                         "resources",
			`{"resources":[` + many + `],"owner":"svc-a","ttl_seconds":30}`:              "resources",
			`{"resources":["x","x"],"owner":"svc-a","ttl_seconds":30}`:                   "resources[1]",
			`{"resources":["x",""],"owner":"svc-a","ttl_seconds":30}`:                    "resources[1]",
			`{"resources":["x",7],"owner":"svc-a","ttl_seconds":30}`:                     "resources[1]",
			`{"resources":["x\u0001"],"owner":"svc-a","ttl_seconds":30}`:                 "resources[0]",
			`{"resources":["x"],"owner":"","ttl_seconds":30}`:                            "owner",
			`{"resources":["x"],"owner":"svc-a","ttl_seconds":30,"wait_ms":-1}`:          "wait_ms",
			`{"resources":["x"],"owner":"svc-a","ttl_seconds":30,"lock_delay_ms":60001}`: "lock_delay_ms",
			`{"resources":["x"],"owner":"svc-a","ttl_seconds":30,"nope":1}`:              "nope",
		} {
			h.Do(t, http.MethodPost, "/locks", body).Fields(t, field)
		}
		h.Do(t, http.MethodDelete, "/locks", `{"resources":["x"]}`).Fields(t, "owner")
		if lk := h.status(t, "x"); lk != nil {
			t.Errorf("got x %+v, want no lock", lk)
		}
	})
}
