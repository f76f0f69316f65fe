package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// cmdHealthcheck asks a running gateway whether it is healthy and sets the
// exit status: 0 for a 2xx answer, 1 otherwise. It exists for container
// health checks (the image has no curl). By default it asks /readyz at the
// address LEASEGATE_ADDR names, with 0.0.0.0 or :: read as loopback.
func cmdHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("leasegate healthcheck", flag.ContinueOnError)
	url := fs.String("url", defaultHealthURL(getenv("LEASEGATE_ADDR")), "URL to GET; healthy when it answers 2xx (default from LEASEGATE_ADDR)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("healthcheck takes no arguments, got %q", fs.Args())}
	}
	if *timeout <= 0 {
		return usageError{errors.New("--timeout must be positive")}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return usageError{fmt.Errorf("--url: %w", err)}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return exitError{code: 1, msg: fmt.Sprintf("unhealthy: %v", err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return exitError{code: 1, msg: fmt.Sprintf("unhealthy: %s answered %s", *url, resp.Status)}
	}
	fmt.Fprintf(stdout, "healthy: %s answered %s\n", *url, resp.Status)
	return nil
}

// defaultHealthURL is /readyz on the gateway's own listen address.
func defaultHealthURL(addr string) string {
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/readyz"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz"
}
