package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/leasegate/leasegate"
)

// RateLimit is a user lock's quota as the gateway's RateLimit header
// fields tell it (draft-ietf-httpapi-ratelimit-headers-10): Quota is the
// lock's max_attempts, Window its window, Remaining the attempts left
// before the flag, Reset the time until the window (or a ban) ends.
type RateLimit = leasegate.RateLimit

// ParseRateLimit reads the RateLimit-Policy and RateLimit header fields
// of an answer (the first policy of each list, matched by name). ok is
// false when either is missing or not understood.
func ParseRateLimit(h http.Header) (rl RateLimit, ok bool) {
	pname, pparams, ok1 := sfItem(h.Get("RateLimit-Policy"))
	name, params, ok2 := sfItem(h.Get("RateLimit"))
	if !ok1 || !ok2 || pname != name {
		return RateLimit{}, false
	}
	q, okq := pparams["q"]
	r, okr := params["r"]
	if !okq || !okr {
		return RateLimit{}, false
	}
	return RateLimit{
		Policy:    name,
		Quota:     q,
		Window:    time.Duration(pparams["w"]) * time.Second,
		Remaining: r,
		Reset:     time.Duration(params["t"]) * time.Second,
	}, true
}

// sfItem parses the first member of a structured-field list whose item is
// a string with integer parameters: "name";a=1;b=2.
func sfItem(v string) (string, map[string]int64, bool) {
	v, _, _ = strings.Cut(v, ",")
	parts := strings.Split(strings.TrimSpace(v), ";")
	name, err := strconv.Unquote(strings.TrimSpace(parts[0]))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(parts[0]), `"`) {
		return "", nil, false
	}
	params := map[string]int64{}
	for _, p := range parts[1:] {
		k, val, found := strings.Cut(strings.TrimSpace(p), "=")
		if !found {
			continue // a boolean parameter; none of ours
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			continue // not an integer parameter (e.g. pk); skip it
		}
		params[k] = n
	}
	return name, params, true
}
