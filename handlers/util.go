package handlers

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

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
