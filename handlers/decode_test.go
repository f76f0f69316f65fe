package handlers_test

import (
	"net/http"
	"testing"

	"github.com/leasegate/leasegate/handlers"
)

func TestLoneSurrogatesInTheOwnerAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, s := range handlers.LoneSurrogates {
		t.Run(name, func(t *testing.T) {
			h.Do(t, http.MethodPost, "/locks/r", `{"owner":"`+s+`","ttl_seconds":30}`).Fields(t, "owner")
			h.Do(t, http.MethodPost, "/locks/r/renew", `{"owner":"`+s+`","ttl_seconds":30}`).Fields(t, "owner")
			h.Do(t, http.MethodDelete, "/locks/r", `{"owner":"`+s+`"}`).Fields(t, "owner")
		})
	}
	if got := h.status(t, "r"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}

	t.Run("two different lone surrogates never share a lease", func(t *testing.T) {
		h := newHarness(t)
		h.Do(t, http.MethodPost, "/locks/s", `{"owner":"\ud800","ttl_seconds":30}`).Fields(t, "owner")
		h.Do(t, http.MethodPost, "/locks/s", `{"owner":"\udfff","ttl_seconds":30}`).Fields(t, "owner")
		if got := h.status(t, "s"); got != nil {
			t.Errorf("got %+v, want nothing written", got)
		}
	})
	t.Run("a lone surrogate cannot release the replacement character's lease", func(t *testing.T) {
		h := newHarness(t)
		held := h.acquire(t, "fffd", "\ufffd", 30)
		h.Do(t, http.MethodDelete, "/locks/fffd", `{"owner":"\ud800"}`).Fields(t, "owner")
		if got := h.status(t, "fffd"); got == nil || *got != held {
			t.Errorf("got %+v, want unchanged %+v", got, held)
		}
	})
}

func TestSurrogatePairsAreOneCharacter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var got acquireJSON
	h.Do(t, http.MethodPost, "/locks/r", `{"owner":"svc-\ud83d\ude00","ttl_seconds":30}`).JSON(t, http.StatusOK, &got)
	if got.Lock == nil || got.Lock.Owner != "svc-😀" {
		t.Fatalf("got %+v, want owner svc-😀", got)
	}
	t.Run("the pair and the raw UTF-8 are the same owner", func(t *testing.T) {
		again := h.acquire(t, "r", "svc-😀", 30)
		if again.Token != got.Lock.Token {
			t.Errorf("got token %d, want the same lease's %d", again.Token, got.Lock.Token)
		}
	})
	t.Run("upper-case hex and an escaped U+FFFD are accepted", func(t *testing.T) {
		lk := h.acquire(t, "u", "\ufffd", 30)
		var same acquireJSON
		h.Do(t, http.MethodPost, "/locks/u", `{"owner":"\uFFFD","ttl_seconds":30}`).JSON(t, http.StatusOK, &same)
		if same.Lock == nil || same.Lock.Token != lk.Token {
			t.Errorf("got %+v, want the lease %d of owner U+FFFD", same, lk.Token)
		}
	})
}

// A member name with a lone surrogate is never a known field; it is
// reported as sent, so two of them are two fields, not one U+FFFD twice.
func TestLoneSurrogatesInFieldNamesAreUnknownFields(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Do(t, http.MethodPost, "/locks/r", `{"owner":"svc-a","ttl_seconds":30,"\udfff":1,"\ud800":2}`).Fields(t, `\ud800`, `\udfff`)
	h.Do(t, http.MethodPost, "/locks/r", `{"owner\ud800":"svc-a","ttl_seconds":30}`).Fields(t, `owner\ud800`)
	if got := h.status(t, "r"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
}
