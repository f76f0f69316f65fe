package server

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
)

// getHost sends GET path to the server at addr with the Host header
// host, as a browser tricked by DNS rebinding would (evil.example
// resolving to 127.0.0.1), and the header pairs hdr; it returns the
// status and the problem's type.
func getHost(t *testing.T, addr, path, host string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", path, host, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &p)
	return res.StatusCode, p.Type
}

// In open mode every caller is an operator, and "loopback only" is what
// keeps strangers out. A web page the developer visits can still reach a
// loopback port by DNS rebinding (its own name resolving to 127.0.0.1):
// the browser then sends that name as Host, and the same-origin policy
// lets the page read the answers. Open mode on loopback answers only
// requests addressed to a loopback host.
func TestOpenModeRefusesRequestsForOtherHosts(t *testing.T) {
	t.Parallel()
	s := start(t, testConfig(t), nil)
	_, port, _ := net.SplitHostPort(s.Addr())

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "localhost", "[::1]:" + port, "127.0.0.2:" + port} {
		if code, _ := getHost(t, s.Addr(), "/abuse/flagged", host); code != http.StatusOK {
			t.Errorf("Host %q: got %d, want 200", host, code)
		}
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example", "10.0.0.1:" + port} {
		for _, path := range []string{"/abuse/flagged", "/ops/", "/locks/x", "/metrics"} {
			code, typ := getHost(t, s.Addr(), path, host)
			if code != http.StatusForbidden || typ != "https://leasegate.dev/problems/forbidden" {
				t.Errorf("GET %s with Host %q: got %d %q, want 403 forbidden", path, host, code, typ)
			}
		}
	}
	// Health checks stay answerable whatever the Host.
	if code, _ := getHost(t, s.Addr(), "/healthz", "evil.example"); code != http.StatusOK {
		t.Errorf("GET /healthz with Host evil.example: got %d, want 200", code)
	}

	t.Run("with keys any Host is served (the key is the guard)", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.APIKeys = testKeyEntries()
		s := start(t, cfg, nil)
		if code, _ := getHost(t, s.Addr(), "/abuse/flagged", "gateway.example", "Authorization", "Bearer "+testOpsKey); code != http.StatusOK {
			t.Errorf("got %d, want 200", code)
		}
	})
	t.Run("with --insecure-open on a non-loopback address any Host is served", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Addr = "0.0.0.0:0"
		cfg.InsecureOpen = true
		s := start(t, cfg, nil)
		_, port, _ := net.SplitHostPort(s.Addr())
		if code, _ := getHost(t, "127.0.0.1:"+port, "/abuse/flagged", "gateway.lan"); code != http.StatusOK {
			t.Errorf("got %d, want 200", code)
		}
	})
}
