package gatewaytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// ReusedToken is the fencing token StartTokenReuser grants every time.
const ReusedToken = 7

// StartTokenReuser runs a fake gateway that grants every acquire, always
// with token ReusedToken, so two owners in a row are told they hold the
// same resource; releases answer 204, all else 404. It returns the base
// URL and closes the server at cleanup.
func StartTokenReuser(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resource := strings.TrimPrefix(r.URL.Path, "/locks/")
		switch r.Method {
		case http.MethodPost:
			var body struct {
				Owner string `json:"owner"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			now := time.Now().UTC()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"acquired": true, "lock": map[string]any{
				"resource": resource, "owner": body.Owner, "token": ReusedToken,
				"acquired_at": now, "expires_at": now.Add(10 * time.Second),
			}})
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
