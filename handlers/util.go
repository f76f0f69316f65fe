package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"
)

func unescapePath(v string) (string, error) {
	s, err := url.PathUnescape(v)
	if err != nil {
		return "", Invalid(FieldError{Field: "resource", Message: "bad percent-encoding"})
	}
	return s, nil
}

func writeJSON(w http.ResponseWriter, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// sendJSON writes v with status as application/json.
func sendJSON(c echo.Context, status int, v any) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(status)
	return writeJSON(c.Response(), v)
}

// Timestamp formats t as RFC 3339 UTC with milliseconds, as the contract
// asks: 2026-11-30T09:30:00.123Z.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
