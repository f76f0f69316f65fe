package handlers

import (
	"strings"
	"testing"

	"github.com/leasegate/leasegate/abuse"
)

// loneSurrogates are JSON string contents (as sent, escapes and all) with a
// UTF-16 surrogate escape that has no partner. encoding/json turns each of
// them into U+FFFD, so "\ud800" and "\udfff" would be the same string.
var loneSurrogates = map[string]string{
	"a high surrogate alone":                   `\ud800`,
	"a low surrogate alone":                    `\udfff`,
	"upper-case hex":                           `\uD83D`,
	"a high surrogate at the end":              `svc-\ud83d`,
	"a high surrogate before a letter":         `\ud83dx`,
	"a high surrogate before an escaped A":     `\ud83d\u0041`,
	"two high surrogates":                      `\ud83d\ud83d`,
	"a pair the wrong way round":               `\ude00\ud83d`,
	"a low surrogate after a valid pair":       `\ud83d\ude00\ude00`,
	"a high surrogate before an escaped quote": `\ud83d\"`,
}

// LoneSurrogates is loneSurrogates for the route tests in handlers_test.
var LoneSurrogates = loneSurrogates

func TestStringFieldsRefuseLoneSurrogates(t *testing.T) {
	for name, s := range loneSurrogates {
		t.Run(name, func(t *testing.T) {
			fields, err := decodeObject([]byte(`{"owner":"`+s+`","reason":"ok `+s+`"}`), "owner", "reason")
			if err != nil {
				t.Fatalf("got %v, want the body split into fields", err)
			}
			var ck checker
			for _, f := range []string{"owner", "reason"} {
				if v, ok := ck.stringField(fields, f, true); ok {
					t.Errorf("%s: got %q accepted, want it refused", f, v)
				}
			}
			if len(ck.errs) != 2 || ck.errs[0].Field != "owner" || ck.errs[1].Field != "reason" ||
				!strings.Contains(ck.errs[0].Message, "surrogate") {
				t.Errorf("got errors %+v, want owner and reason refused for a lone surrogate", ck.errs)
			}
		})
	}
}

func TestStringFieldsKeepSurrogatePairs(t *testing.T) {
	for in, want := range map[string]string{
		`\ud83d\ude00`:           "😀",
		`\uD83D\uDE00`:           "😀",
		`a\ud800\udc00z`:         "a\U00010000z",
		`\udbff\udfff`:           "\U0010FFFF",
		`\ufffd`:                 "\ufffd",
		"\ufffd":                 "\ufffd",
		`\u00e9\"\\\/\b\f\n\r\t`: "é\"\\/\b\f\n\r\t",
	} {
		fields, err := decodeObject([]byte(`{"owner":"`+in+`"}`), "owner")
		if err != nil {
			t.Fatalf("%s: got %v", in, err)
		}
		var ck checker
		if got, ok := ck.stringField(fields, "owner", true); !ok || got != want {
			t.Errorf("%s: got %q (ok %v, %+v), want %q", in, got, ok, ck.errs, want)
		}
	}
}

func TestLoneSurrogatesInABanReasonAreRefused(t *testing.T) {
	env := newAbuseEnv(t, abuse.DefaultPolicies())
	for name, s := range loneSurrogates {
		t.Run(name, func(t *testing.T) {
			a := env.do(t, "POST", "/abuse/bans/u1", `{"seconds":60,"reason":"`+s+`"}`).want(t, 422)
			a.slug(t, "validation")
			errs, _ := a.body["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["field"] != "reason" {
				t.Errorf("got errors %v, want reason alone", errs)
			}
		})
	}
	t.Run("nobody was banned", func(t *testing.T) {
		env.do(t, "POST", "/user-locks/login/u1", "").want(t, 200)
	})
	t.Run("a surrogate pair in a reason is fine", func(t *testing.T) {
		a := env.do(t, "POST", "/abuse/bans/u2", `{"seconds":60,"reason":"spam \ud83d\ude00"}`).want(t, 201)
		if got := a.body["reason"]; got != "spam 😀" {
			t.Errorf("got reason %v, want spam 😀", got)
		}
	})
}
