package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/ and run with go test.

// FuzzDecodeAcquire checks the acquire body decoder against encoding/json:
// it never panics; it calls a body malformed (400) exactly when
// encoding/json does (or the body is not UTF-8, or not an object); what it
// accepts is what encoding/json reads, re-validates, and survives a round
// trip; and no accepted owner holds a U+FFFD the client did not send.
func FuzzDecodeAcquire(f *testing.F) {
	f.Add([]byte(`{"owner":"svc-a","ttl_seconds":30,"wait_ms":0}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) == 0 {
			body = nil // readBody's answer for an empty body
		}
		owner, ttl, wait, err := decodeAcquireBody(body)

		var p *leasegate.Error
		if err != nil && !errors.As(err, &p) {
			t.Fatalf("got error %T %v, want a *leasegate.Error", err, err)
		}
		wellFormed := body == nil || utf8.Valid(body) && json.Valid(body) && bytes.TrimLeft(body, " \t\r\n")[0] == '{'
		if malformed := p != nil && api.Status(p.Code) == http.StatusBadRequest; malformed == wellFormed {
			t.Fatalf("%q: got %v, but encoding/json says well-formed=%v", body, err, wellFormed)
		}
		if p != nil && api.Status(p.Code) != http.StatusBadRequest && api.Status(p.Code) != http.StatusUnprocessableEntity {
			t.Fatalf("%q: got status %d, want 400 or 422", body, api.Status(p.Code))
		}
		if err != nil {
			return
		}

		if owner != strings.TrimSpace(owner) || owner == "" || len(owner) > 255 || !utf8.ValidString(owner) || hasControl(owner) {
			t.Errorf("%q: accepted owner %q, which does not validate", body, owner)
		}
		if ttl < 1 || ttl > 86400 || wait < 0 || wait > 30000 {
			t.Errorf("%q: accepted ttl %d, wait %d out of range", body, ttl, wait)
		}
		if got, sent := strings.Count(owner, "\ufffd"), sentReplacementChars(body); got > sent {
			t.Errorf("%q: owner %q holds %d U+FFFD, the body sent %d", body, owner, got, sent)
		}

		// encoding/json reads the same values (it has no duplicates or
		// lone surrogates to disagree on once we accepted).
		var std struct {
			Owner string      `json:"owner"`
			TTL   json.Number `json:"ttl_seconds"`
			Wait  json.Number `json:"wait_ms"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("%q: accepted, but encoding/json says %v", body, err)
		}
		if strings.TrimSpace(std.Owner) != owner {
			t.Errorf("%q: got owner %q, encoding/json reads %q", body, owner, std.Owner)
		}
		if n, err := std.TTL.Int64(); err != nil || n != ttl {
			t.Errorf("%q: got ttl %d, encoding/json reads %q", body, ttl, std.TTL)
		}
		if n, err := std.Wait.Int64(); std.Wait != "" && (err != nil || n != wait) {
			t.Errorf("%q: got wait %d, encoding/json reads %q", body, wait, std.Wait)
		}

		quoted, _ := json.Marshal(owner)
		again := fmt.Sprintf(`{"owner":%s,"ttl_seconds":%d,"wait_ms":%d}`, quoted, ttl, wait)
		o2, t2, w2, err := decodeAcquireBody([]byte(again))
		if err != nil || o2 != owner || t2 != ttl || w2 != wait {
			t.Errorf("%s: got %q %d %d (%v) on the way back, want %q %d %d", again, o2, t2, w2, err, owner, ttl, wait)
		}
	})
}

// sentReplacementChars counts the U+FFFD a body sends on purpose, raw or
// as an escape (an overestimate is harmless here).
func sentReplacementChars(body []byte) int {
	lower := bytes.ToLower(body)
	return bytes.Count(body, []byte("\ufffd")) + bytes.Count(lower, []byte(`\ufffd`))
}

// FuzzDecodeString checks the string path (decodeObject, then unquote)
// against encoding/json on one string: decodeObject accepts exactly what
// encoding/json calls a string as a member's value; unquote gives
// encoding/json's text, except that it refuses the strings where
// encoding/json would have made a lone surrogate escape into U+FFFD.
func FuzzDecodeString(f *testing.F) {
	f.Add(`svc-\ud83d\ude00`)
	f.Fuzz(func(t *testing.T, content string) {
		quoted := []byte(`"` + content + `"`)
		if !utf8.Valid(quoted) {
			return // decodeObject refuses the whole body first
		}
		fields, perr := decodeObject([]byte(`{"s":`+string(quoted)+`}`), "s")
		raw := fields["s"]
		scanned := perr == nil && bytes.Equal(raw, quoted)
		if valid := json.Valid(quoted); scanned != valid {
			t.Fatalf("%q: decodeObject says %v (%v), encoding/json says valid=%v", quoted, scanned, perr, valid)
		}
		if !scanned {
			return
		}
		var std string
		if err := json.Unmarshal(quoted, &std); err != nil {
			t.Fatalf("%q: %v", quoted, err)
		}
		got, ok := unquote(raw)
		lone := hasLoneSurrogate(content)
		switch {
		case ok == lone:
			t.Errorf("%q: unquote ok=%v, but a lone surrogate is there=%v", quoted, ok, lone)
		case ok && got != std:
			t.Errorf("%q: got %q, encoding/json reads %q", quoted, got, std)
		}
	})
}

// hasLoneSurrogate says, by way of unicode/utf16, whether the contents of
// a well-formed JSON string hold a surrogate escape without its partner:
// as UTF-16 code units, decoding them adds a U+FFFD.
func hasLoneSurrogate(content string) bool {
	var units []uint16
	for i := 0; i < len(content); {
		switch {
		case content[i] == '\\' && content[i+1] == 'u':
			u, err := strconv.ParseUint(content[i+2:i+6], 16, 16)
			if err != nil {
				panic(err) // the scanner let a bad escape through
			}
			units = append(units, uint16(u))
			i += 6
		case content[i] == '\\':
			units = append(units, 'x')
			i += 2
		default:
			r, size := utf8.DecodeRuneInString(content[i:])
			units = utf16.AppendRune(units, r)
			i += size
		}
	}
	decoded := string(utf16.Decode(units))
	return strings.Count(decoded, "\ufffd") > countUnit(units, 0xfffd)
}

func countUnit(units []uint16, u uint16) int {
	n := 0
	for _, v := range units {
		if v == u {
			n++
		}
	}
	return n
}
