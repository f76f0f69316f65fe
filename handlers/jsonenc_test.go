package handlers

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

func stdJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return buf.Bytes()
}

var awkwardStrings = []string{
	"", "daily-report", "a b", "ü", "{a}", `quote " and \ backslash`,
	"<script>&amp;</script>", "tab\there", "nl\nnul\x00 del\x7f bell\x07",
	"\b\f\r", "line\u2028sep\u2029", "bad utf8 \xff\xfe end", "\xc3", "emoji 😀",
	"x'; DROP TABLE distributed_locks; --", "\u00e9\u0301", "\ufffd",
}

func TestAppendStringWritesWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	for _, s := range awkwardStrings {
		got := append(appendString(nil, s), '\n')
		if want := stdJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q): got %s, want %s", s, got, want)
		}
	}
}

func TestHotAnswersAreTheBytesEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 23, 59, 58, 123456789, time.FixedZone("x", 3600))
	for _, s := range awkwardStrings {
		l := leasegate.Lock{Resource: s, Owner: "o" + s, Token: 1796031000000001, AcquiredAt: at, ExpiresAt: at.Add(30 * time.Second)}
		got := append(appendLock([]byte(`{"acquired":true,"lock":`), l), "}\n"...)
		if want := stdJSON(t, acquiredJSON{Acquired: true, Lock: toLockJSON(l)}); !bytes.Equal(got, want) {
			t.Errorf("LOCK of %q: got %s, want %s", s, got, want)
		}
		if got, want := append(appendLock([]byte(`{"lock":`), l), "}\n"...), stdJSON(t, heldJSON{Lock: toLockJSON(l)}); !bytes.Equal(got, want) {
			t.Errorf("held LOCK of %q: got %s, want %s", s, got, want)
		}
		c := contendedJSON{Resource: s, RetryAfterMS: 29_999}
		got = append(append(append([]byte(`{"acquired":false,"resource":`), appendString(nil, s)...), `,"retry_after_ms":29999`...), "}\n"...)
		if want := stdJSON(t, c); !bytes.Equal(got, want) {
			t.Errorf("contended %q: got %s, want %s", s, got, want)
		}
		p := api.Problem{Type: "https://x/" + s, Title: "Unprocessable", Status: 422, Detail: s}
		if got, want := appendProblem(nil, p), stdJSON(t, p); !bytes.Equal(got, want) {
			t.Errorf("problem %q: got %s, want %s", s, got, want)
		}
		p.Errors = []leasegate.FieldError{{Field: s, Message: "bad"}, {Field: "owner", Message: s}}
		if got, want := appendProblem(nil, p), stdJSON(t, p); !bytes.Equal(got, want) {
			t.Errorf("problem with fields %q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range awkwardStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := append(appendString(nil, s), '\n')
		if want := stdJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q): got %s, want %s", s, got, want)
		}
	})
}
