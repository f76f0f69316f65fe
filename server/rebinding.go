package server

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
	"go.uber.org/zap"
)

// loopbackHostOnly guards open mode on a loopback address against DNS
// rebinding: a web page whose own name is made to resolve to 127.0.0.1
// reaches the gateway from the developer's browser, which then sends that
// name as Host, and the same-origin policy lets the page read every
// answer (open mode has no key to stop it). So only requests addressed to
// a loopback host (localhost, 127.0.0.0/8, ::1, any port) are served;
// others get 403 forbidden. /healthz and /readyz answer whatever the Host.
func loopbackHostOnly(next http.Handler, log *zap.Logger) http.Handler {
	refusal, _ := json.Marshal(api.ProblemOf(leasegate.NewError(leasegate.CodeForbidden,
		"this gateway runs open (no API keys) and answers only requests addressed to a loopback host (localhost, 127.0.0.1, [::1])"), 0))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopbackHost(r.Host) || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		log.Warn("open mode: refused a request addressed to a host that is not loopback (DNS rebinding?)",
			zap.String("host", r.Host), zap.String("remote_addr", r.RemoteAddr))
		w.Header().Set("Content-Type", api.ProblemContentType)
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write(append(refusal, '\n'))
	})
}

// loopbackHost reports whether a Host header names a loopback host. An
// empty Host (HTTP/1.0; browsers always send one) is allowed.
func loopbackHost(host string) bool {
	if host == "" {
		return true
	}
	h := host
	if sh, _, err := net.SplitHostPort(host); err == nil {
		h = sh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
