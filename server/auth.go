package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/auth"
)

// Values of Config.MetricsAuth.
const (
	// MetricsAuthOps: /metrics needs an ops key (when keys are configured).
	MetricsAuthOps = "ops"
	// MetricsAuthNone: /metrics is served to anyone who can reach it.
	MetricsAuthNone = "none"
)

// loadKeys loads the API keys into s.keyring. No keys is open mode (a
// nil keyring), allowed only on a loopback address unless InsecureOpen;
// it is logged as a warning either way. A key file or list that is
// configured but holds no key is an error, not open mode.
func (s *Server) loadKeys() error {
	keys, err := auth.Load(s.cfg.APIKeysFile, s.cfg.APIKeys)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.warnIfKeyFileOpen()
	if len(keys) == 0 && (s.cfg.APIKeysFile != "" || strings.TrimSpace(s.cfg.APIKeys) != "") {
		// Keys were configured and none was found: never fall back to
		// open mode (as a reload never does).
		return fmt.Errorf("%w: no API keys found in --api-keys-file %q or --api-keys: refusing to start open; add key entries (see docs/auth.md), or give neither setting for open mode", ErrConfig, s.cfg.APIKeysFile)
	}
	if len(keys) == 0 {
		if !isLocal(s.cfg.Addr) && !s.cfg.InsecureOpen {
			return fmt.Errorf("%w: no API keys configured (--api-keys-file, --api-keys): refusing to serve %q, which is not a loopback address, without authentication; configure keys (see docs/auth.md) or pass --insecure-open", ErrConfig, s.cfg.Addr)
		}
		s.log.Warn("no API keys configured: the gateway is OPEN, every caller is an operator of the default tenant; development only (see docs/auth.md)",
			zap.String("addr", s.cfg.Addr), zap.Bool("insecure_open", s.cfg.InsecureOpen))
		return nil
	}
	kr, err := auth.New(keys, s.log.Named("auth"))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.keyring = kr
	s.log.Info("API keys loaded: every route but /healthz and /readyz needs a key",
		zap.Int("keys", kr.Len()), zap.String("metrics_auth", s.cfg.MetricsAuth))
	return nil
}

// warnIfKeyFileOpen warns, as ssh does for a private key, when the key
// file is readable or writable by group or others. It holds only hashes,
// but without --ops-session-secret those hashes sign /ops/ page sessions
// (docs/auth.md), and whoever can write it can add a key.
func (s *Server) warnIfKeyFileOpen() {
	if s.cfg.APIKeysFile == "" {
		return
	}
	fi, err := os.Stat(s.cfg.APIKeysFile)
	if err != nil {
		return // auth.Load has read it; a race with a rename is not worth a warning
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		s.log.Warn("the API key file is accessible by group or others: whoever reads it can forge /ops/ sessions unless --ops-session-secret is set, whoever writes it can add a key; chmod 600 it (docs/auth.md)",
			zap.String("file", s.cfg.APIKeysFile), zap.String("mode", fmt.Sprintf("%04o", perm)))
	}
}

// ErrOpenMode: keys cannot be reloaded into a gateway started without
// any (its routes were built open); restart it with keys.
var ErrOpenMode = errors.New("server: started without API keys (open mode); restart with keys to enable authentication")

// ReloadKeys reads --api-keys-file and --api-keys again and swaps the new
// set in at once. On any error (unreadable file, bad entry, no keys left)
// the keys in force stay as they were.
func (s *Server) ReloadKeys() error {
	if s.keyring == nil {
		return ErrOpenMode
	}
	keys, err := auth.Load(s.cfg.APIKeysFile, s.cfg.APIKeys)
	if err != nil {
		return fmt.Errorf("server: reload keys: %w", err)
	}
	if err := s.keyring.Replace(keys); err != nil {
		return fmt.Errorf("server: reload keys: %w", err)
	}
	s.warnIfKeyFileOpen()
	s.log.Info("API keys reloaded", zap.Int("keys", len(keys)))
	s.auditKeyReload(context.Background())
	return nil
}

// reloadKeysOn reloads the keys on every value from reload until ctx is
// done; a failed reload is logged and the keys in force stay.
func (s *Server) reloadKeysOn(ctx context.Context, reload <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reload:
			if err := s.ReloadKeys(); err != nil {
				s.log.Error("API keys not reloaded; the previous keys stay in force", zap.Error(err))
			}
		}
	}
}

// parseTrustedProxies reads CIDRs ("10.0.0.0/8") or single addresses
// ("10.0.0.7", meaning /32 or /128).
func parseTrustedProxies(list []string) ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			ip := net.ParseIP(s)
			if ip == nil {
				return nil, fmt.Errorf("trusted-proxies: %q is neither an IP address nor a CIDR", s)
			}
			bits := 128
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			nets = append(nets, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("trusted-proxies: %w", err)
		}
		nets = append(nets, n)
	}
	return nets, nil
}

// ipExtractor decides a request's client IP. With no trusted proxies it is
// the connection's peer address and X-Forwarded-For is ignored. With
// some, X-Forwarded-For is read from the right, skipping addresses in the
// trusted ranges, and the first untrusted one is the client; loopback,
// link-local and private addresses are trusted only when listed (Echo
// trusts them by default, which would let anyone on the LAN spoof).
func ipExtractor(list []string) (echo.IPExtractor, error) {
	nets, err := parseTrustedProxies(list)
	if err != nil {
		return nil, err
	}
	if len(nets) == 0 {
		return echo.ExtractIPDirect(), nil
	}
	opts := []echo.TrustOption{
		echo.TrustLoopback(false),
		echo.TrustLinkLocal(false),
		echo.TrustPrivateNet(false),
	}
	for _, n := range nets {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...), nil
}
