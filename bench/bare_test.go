package bench

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
)

// The bare gateway grants a free name once, refuses a body it cannot
// read, and releases only for the owner.
func TestTheBareGatewayIsALock(t *testing.T) {
	t.Parallel()
	b, err := startBare(&redis.Options{Addr: redistest.Start(t).Addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	url := b.url() + "/locks/bare-test"
	for _, tc := range []struct {
		name, method, body string
		want               int
		granted            bool
	}{
		{"a bad body is refused", http.MethodPost, `{"owner":`, http.StatusBadRequest, false},
		{"no TTL is refused", http.MethodPost, `{"owner":"a"}`, http.StatusBadRequest, false},
		{"a free name is granted", http.MethodPost, `{"owner":"a","ttl_seconds":5}`, http.StatusOK, true},
		{"a held name is not", http.MethodPost, `{"owner":"b","ttl_seconds":5}`, http.StatusOK, false},
		{"another owner cannot release", http.MethodDelete, `{"owner":"b"}`, http.StatusNotFound, false},
		{"the owner releases", http.MethodDelete, `{"owner":"a"}`, http.StatusNoContent, false},
		{"the name is free again", http.MethodPost, `{"owner":"b","ttl_seconds":5}`, http.StatusOK, true},
	} {
		req, _ := http.NewRequest(tc.method, url, bytes.NewBufferString(tc.body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.want || Granted(body.Bytes()) != tc.granted {
			t.Errorf("%s: got %d %q, want %d, granted %v", tc.name, res.StatusCode, body.String(), tc.want, tc.granted)
		}
	}
}
