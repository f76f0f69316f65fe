package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/redistest"
)

// TestMain lets the test binary act as the leasegate binary, so the
// signal handling in main itself can be tested in a child process, and
// `bench -waiters` can start it as its gateway.
func TestMain(m *testing.M) {
	if os.Getenv("LEASEGATE_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	benchGatewayEnv = []string{"LEASEGATE_TEST_RUN_MAIN=1"}
	os.Exit(redistest.Run(m))
}

func TestServeStopsGracefullyOnSIGTERMAndSIGINT(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			addr := redistest.FreeAddr(t)
			cmd := exec.Command(os.Args[0], "serve")
			cmd.Env = append(os.Environ(), "LEASEGATE_TEST_RUN_MAIN=1", "LEASEGATE_ADDR="+addr)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
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

			waitServing(t, addr, exited, &stderr)

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("signal: %v", err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("got exit %v (stderr %s), want status 0", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("leasegate still running 20s after %v", sig)
			}
			for _, want := range []string{"shutting down", `"msg":"stopped"`} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("got logs %s, want %q", stdout.String(), want)
				}
			}
		})
	}
}
