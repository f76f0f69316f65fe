package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/leasegate/leasegate/client"
)

// cmdHealthcheck asks a running gateway whether it is healthy and sets the
// exit status: 0 for a 2xx answer, 1 otherwise. It exists for container
// health checks (the image has no curl). --url (LEASEGATE_URL) is the
// gateway's base URL (or unix:/path for a gateway on a Unix socket), as
// for every other client-side command, and
// /readyz is appended to it; a URL that already names /readyz or
// /healthz is used as it is (what --url meant before). Without --url it
// asks the address LEASEGATE_ADDR names, with 0.0.0.0 or :: read as
// loopback.
func cmdHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("leasegate healthcheck", flag.ContinueOnError)
	base := fs.String("url", defaultHealthBase(getenv("LEASEGATE_ADDR")), "base URL of the gateway; healthy when its /readyz answers 2xx (default from LEASEGATE_ADDR)")
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
	url, hc, err := "", http.DefaultClient, error(nil)
	if path, ok := strings.CutPrefix(*base, "unix:"); ok {
		// A gateway on a Unix socket (--addr unix:/path).
		url, hc = "http://localhost/readyz", &http.Client{Transport: client.UnixTransport(path)}
	} else if url, err = healthURL(*base); err != nil {
		return usageError{fmt.Errorf("--url: %w", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageError{fmt.Errorf("--url: %w", err)}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return exitError{code: 1, msg: fmt.Sprintf("unhealthy: %v", err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return exitError{code: 1, msg: fmt.Sprintf("unhealthy: %s answered %s", url, resp.Status)}
	}
	fmt.Fprintf(stdout, "healthy: %s answered %s\n", url, resp.Status)
	return nil
}

// defaultHealthBase is the base URL of the gateway's own listen address.
func defaultHealthBase(addr string) string {
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	if strings.HasPrefix(addr, "unix:") {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// healthURL is /readyz under the base URL base. A base that already ends
// in /readyz or /healthz is kept, so health checks written when --url was
// the probe's own URL keep working.
func healthURL(base string) (string, error) {
	u, err := neturl.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// base URL", base)
	}
	if p := strings.TrimSuffix(u.Path, "/"); strings.HasSuffix(p, "/readyz") || strings.HasSuffix(p, "/healthz") {
		return base, nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/readyz"
	u.RawPath = ""
	return u.String(), nil
}

// defaultHealthURL is what a healthcheck without --url asks.
func defaultHealthURL(addr string) string { return defaultHealthBase(addr) + "/readyz" }
