package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
	"github.com/leasegate/leasegate"
)

func unescapePath(v string) (string, error) {
	s, err := url.PathUnescape(v)
	if err != nil {
		return "", leasegate.Invalid(leasegate.FieldError{Field: "resource", Message: "bad percent-encoding"})
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
