package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// TestMain lets the test binary act as the leasegate binary, so the
// signal handling in main itself can be tested in a child process.
func TestMain(m *testing.M) {
	if os.Getenv("LEASEGATE_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(redistest.Run(m))
}

// TestServeDrainsOnSIGTERMAndSIGINT: on a shared Redis, the first signal turns /readyz to
// 503 while calls are still served, each with Connection: close; the
// second ends the (one-minute) drain at once: the waiter is answered 503
// unavailable with Retry-After, the event stream ends with a reconnect
// event, and the gateway exits 0.
func TestServeDrainsOnSIGTERMAndSIGINT(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			addr := redistest.FreeAddr(t)
			base := "http://" + addr
			// A shared Redis: a gateway on the embedded store does not drain.
			rds := redistest.Start(t)
			var stdout, stderr bytes.Buffer
			cmd, exited := startServe(t, &stdout, &stderr, nil, "LEASEGATE_ADDR="+addr, "LEASEGATE_DRAIN_DELAY=1m", "LEASEGATE_REDIS_URL="+rds.URL())
			waitServing(t, addr, exited, &stderr)

			// Each call on a connection of its own.
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
			post := func(resource, body string) *http.Response {
				t.Helper()
				res, err := hc.Post(base+"/locks/"+resource, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatalf("POST /locks/%s: %v", resource, err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				return res
			}
			if res := post("held", `{"owner":"a","ttl_seconds":60}`); res.StatusCode != http.StatusOK {
				t.Fatalf("acquire: got %d, want 200", res.StatusCode)
			}
			waited := make(chan *http.Response, 1)
			go func() {
				res, err := hc.Post(base+"/locks/held", "application/json", strings.NewReader(`{"owner":"b","ttl_seconds":60,"wait_ms":30000}`))
				if err != nil {
					t.Errorf("waiting acquire: %v", err)
					close(waited)
					return
				}
				_ = res.Body.Close()
				waited <- res
			}()
			stream, err := hc.Get(base + "/locks/held/events")
			if err != nil || stream.StatusCode != http.StatusOK {
				t.Fatalf("GET /locks/held/events: %v, %v", stream, err)
			}
			defer stream.Body.Close()
			redistest.Eventually(t, 20*time.Second, "the acquire to wait", func() bool {
				res, err := hc.Get(base + "/metrics")
				if err != nil {
					return false
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return strings.Contains(string(b), "\nleasegate_lock_waiters 1\n")
			})

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("signal: %v", err)
			}
			redistest.Eventually(t, 20*time.Second, "/readyz to answer 503", func() bool {
				res, err := hc.Get(base + "/readyz")
				if err != nil {
					t.Fatalf("/readyz during the drain: %v", err)
				}
				_ = res.Body.Close()
				return res.StatusCode == http.StatusServiceUnavailable
			})
			// A keep-alive client is told to leave its connection.
			res, err := http.Post(base+"/locks/during-drain", "application/json", strings.NewReader(`{"owner":"c","ttl_seconds":5}`))
			if err != nil {
				t.Fatalf("a call during the drain: %v", err)
			}
			_ = res.Body.Close()
			// (net/http reads Connection: close into res.Close.)
			if res.StatusCode != http.StatusOK || !res.Close {
				t.Errorf("a call during the drain: got %d, close %v; want 200 with Connection: close", res.StatusCode, res.Close)
			}
			select {
			case res := <-waited:
				t.Fatalf("the waiter was answered during the drain (%v), want it still waiting", res)
			default:
			}

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("second signal: %v", err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("got exit %v (stderr %s), want status 0", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("leasegate still running 20s after the second %v (the drain is 1m)", sig)
			}
			if res := <-waited; res == nil || res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
				t.Errorf("the waiter: got %v, want 503 with Retry-After", res)
			}
			events, _ := io.ReadAll(stream.Body)
			if !strings.Contains(string(events), "event: reconnect\n") {
				t.Errorf("the event stream: got %q, want it to end with a reconnect event", events)
			}
			for _, want := range []string{"draining", "second signal", "shutting down", `"msg":"stopped"`} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("got logs %s, want %q", stdout.String(), want)
				}
			}
			// A balancer polls /readyz all through a drain: its 503s are
			// expected, not failures to log.
			if strings.Contains(stdout.String(), `"level":"error"`) {
				t.Errorf("got error lines in the logs of a drain: %s", stdout.String())
			}
		})
	}
}

// relaySignals: SIGHUP asks for a key reload; the first SIGINT or SIGTERM
// leaves the drain alone (main cancels serve's context on it), the second
// ends it.
func TestSignalsBecomeTriggers(t *testing.T) {
	t.Parallel()
	var cfg server.Config
	sigs := make(chan os.Signal) // a send returns once the relay has handled the signal before
	defer relaySignals(sigs, &cfg)()
	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGHUP // received once the SIGTERM is handled
	<-cfg.ReloadKeys
	select {
	case <-cfg.StopDraining:
		t.Fatal("the first SIGTERM ended the drain, want only the second")
	default:
	}
	sigs <- syscall.SIGINT
	<-cfg.StopDraining
}

// serveSignals subscribes SIGHUP: one sent to the process reaches the
// reload trigger instead of ending the process.
func TestServeSignalsSubscribesSIGHUP(t *testing.T) {
	var cfg server.Config
	defer serveSignals(&cfg)()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cfg.ReloadKeys:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP: no reload asked for in 10s")
	}
}

// TestServeOnTheEmbeddedStoreStopsAtOnce: a development gateway has no
// load balancer in front, so SIGINT or SIGTERM stops it without the drain
// (here a minute long), as fast as a process stops.
func TestServeOnTheEmbeddedStoreStopsAtOnce(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			addrFile := filepath.Join(t.TempDir(), "addr")
			var stdout bytes.Buffer
			cmd, exited := startServe(t, &stdout, &stdout, []string{"--addr", "127.0.0.1:0", "--addr-file", addrFile}, "LEASEGATE_DRAIN_DELAY=1m")
			redistest.Eventually(t, 20*time.Second, "the address file", func() bool {
				_, err := os.Stat(addrFile)
				return err == nil
			})
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("signal: %v", err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("got exit %v (output %s), want status 0", err, stdout.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("leasegate still running 30s after %v (the drain is 1m)", sig)
			}
			// Under 1 s on an idle machine; the bound leaves room for a
			// loaded one and still fails a drain.
			took := time.Since(start)
			t.Logf("stopped %v after %v", took, sig)
			if took > 5*time.Second {
				t.Errorf("stopping took %v, want well under the drain's minute (under 5s)", took)
			}
			if strings.Contains(stdout.String(), "draining") {
				t.Errorf("got a drain in the logs of a gateway on the embedded store: %s", stdout.String())
			}
			// Its store goes with it: nothing logged after the start (the
			// open-mode and embedded-store warnings) is a warning, such as
			// a closed connection taken for an outage.
			_, after, _ := strings.Cut(stdout.String(), "leasegate listening")
			if strings.Contains(after, `"level":"warn"`) || strings.Contains(after, `"level":"error"`) {
				t.Errorf("got warnings or errors in the logs of a stop: %s", after)
			}
			if _, err := os.Stat(addrFile); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("address file after stop: got %v, want it removed", err)
			}
		})
	}
}

// startServe runs this test binary as `leasegate serve args...` with env
// added, killed at cleanup if it is still running; exited yields its
// exit.
func startServe(t *testing.T, stdout, stderr io.Writer, args []string, env ...string) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Env = append(append(os.Environ(), "LEASEGATE_TEST_RUN_MAIN=1"), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return cmd, exited
}
