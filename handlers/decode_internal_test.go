package handlers

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
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
	t.Parallel()
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
	t.Parallel()
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

// What encoding/json lets through and the contract does not (see the
// comment above decodeObject): each of these must be refused.
func TestDecodeObjectIsStrict(t *testing.T) {
	t.Parallel()
	allowed := []string{"owner", "ttl_seconds"}
	for _, tc := range []struct {
		name, body string
		status     int      // 0: accepted
		fields     []string // for a 422
	}{
		{"names are case-sensitive", `{"OWNER":"a","Ttl_Seconds":1}`, 422, []string{"OWNER", "Ttl_Seconds"}},
		{"every unknown name is named once", `{"b":1,"owner":"a","a":2,"b":3}`, 422, []string{"a", "b"}},
		{"a duplicate", `{"owner":"a","owner":"b"}`, 422, []string{"owner"}},
		{"a duplicate given three times is named once", `{"owner":"a","owner":"a","owner":"a"}`, 422, []string{"owner"}},
		{"a duplicate spelt with an escape", `{"owne\u0072":"a","owner":"a"}`, 422, []string{"owner"}},
		{"an escaped name is that name", `{"owne\u0072":"a"}`, 0, nil},
		{"a malformed body with a duplicate is malformed", `{"owner":"a","owner":"b",`, 400, nil},
		{"nested values are checked and skipped", `{"x":[[{"a":[1,-2.5e+3,{"b":null,"c":true}],"d":false}],{}, []]}`, 422, []string{"x"}},
		{"empty containers", `{"x":{},"y":[]}`, 422, []string{"x", "y"}},
		{"an empty object", ` {} `, 0, nil},
		{"a trailing comma in an array", `{"x":[1,]}`, 400, nil},
		{"a trailing comma in a nested object", `{"x":{"a":1,}}`, 400, nil},
		{"a nested member without a value", `{"x":{"a"}}`, 400, nil},
		{"a nested member name that is not a string", `{"x":{a:1}}`, 400, nil},
		{"a leading zero", `{"ttl_seconds":01}`, 400, nil},
		{"a bare fraction point", `{"ttl_seconds":1.}`, 400, nil},
		{"a fraction without an integer part", `{"ttl_seconds":.5}`, 400, nil},
		{"a lone minus", `{"ttl_seconds":-}`, 400, nil},
		{"an empty exponent", `{"ttl_seconds":1e}`, 400, nil},
		{"a plus sign", `{"ttl_seconds":+1}`, 400, nil},
		{"a cut literal", `{"x":tru}`, 400, nil},
		{"a long literal", `{"x":nulll}`, 400, nil},
		{"a capital literal", `{"x":True}`, 400, nil},
		{"an unknown escape", `{"owner":"\x"}`, 400, nil},
		{"a short unicode escape", `{"owner":"\u12"}`, 400, nil},
		{"a raw tab in a string", "{\"owner\":\"a\tb\"}", 400, nil},
		{"a raw newline in a name", "{\"own\ner\":1}", 400, nil},
		{"a missing colon", `{"owner" "a"}`, 400, nil},
		{"a missing comma", `{"owner":"a" "ttl_seconds":1}`, 400, nil},
		{"an unclosed object", `{"owner":"a"`, 400, nil},
		{"an unclosed nested array", `{"x":[1`, 400, nil},
		{"a mismatched bracket", `{"x":[1}`, 400, nil},
		{"nesting as deep as encoding/json allows", `{"x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`, 422, []string{"x"}},
		{"nesting deeper than encoding/json allows", `{"x":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, 400, nil},
		{"a nested duplicate is part of the value", `{"x":{"a":1,"a":2}}`, 422, []string{"x"}},
		{"a second object", `{} {}`, 400, nil},
		{"an array", `[]`, 400, nil},
		{"only whitespace", " \n", 400, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeObject([]byte(tc.body), allowed...)
			checkDecodeErr(t, err, tc.status, tc.fields...)
		})
	}
}

// maxDepth bounds nesting, the body's own object included, as
// encoding/json does (jsontext's limit).
const maxDepth = 10000

// checkDecodeErr asserts err is nil (status 0) or a problem with status,
// naming exactly fields.
func checkDecodeErr(t *testing.T, err error, status int, fields ...string) {
	t.Helper()
	if status == 0 {
		if err != nil {
			t.Fatalf("got %v, want the body accepted", err)
		}
		return
	}
	var p *leasegate.Error
	if !errors.As(err, &p) {
		t.Fatalf("got %v, want a %d problem", err, status)
	}
	var got []string
	for _, e := range p.Fields {
		got = append(got, e.Field)
	}
	if api.Status(p.Code) != status || strings.Join(got, ",") != strings.Join(fields, ",") {
		t.Errorf("got %d naming %q (%s), want %d naming %q", api.Status(p.Code), got, p.Message, status, fields)
	}
}

func TestIntegerFieldsTakeIntegerLiteralsOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want int64
		ok   bool
	}{
		{"60", 60, true},
		{"-0", 0, true},
		{"0", 0, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false},
		{"60.5", 0, false},
		{"60.0", 0, false},
		{"1e3", 0, false},
		{"1E3", 0, false},
		{`"3600"`, 0, false},
		{"null", 0, false},
		{"true", 0, false},
		{"[60]", 0, false},
		{"{}", 0, false},
	} {
		fields, err := decodeObject([]byte(`{"n":`+tc.raw+`}`), "n")
		if err != nil {
			t.Fatalf("%s: got %v, want the body split", tc.raw, err)
		}
		var ck checker
		got, present := ck.intField(fields, "n", math.MinInt64, math.MaxInt64, true)
		if ok := len(ck.errs) == 0; ok != tc.ok || got != tc.want || !present {
			t.Errorf("%s: got %d (ok %v, present %v), want %d (ok %v)", tc.raw, got, ok, present, tc.want, tc.ok)
		}
	}
	t.Run("the range is checked", func(t *testing.T) {
		fields, _ := decodeObject([]byte(`{"ttl_seconds":0,"wait_ms":30001}`), "ttl_seconds", "wait_ms")
		var ck checker
		ck.intField(fields, "ttl_seconds", 1, 86400, true)
		ck.intField(fields, "wait_ms", 0, 30000, false)
		ck.intField(fields, "token", 1, 1<<62, false)
		if len(ck.errs) != 2 || ck.errs[0].Field != "ttl_seconds" || ck.errs[1].Field != "wait_ms" {
			t.Errorf("got %+v, want ttl_seconds and wait_ms out of range, an absent token fine", ck.errs)
		}
	})
}
