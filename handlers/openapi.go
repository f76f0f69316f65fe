package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/api"
)

// openapi serves the OpenAPI 3.1 description of every route (api.Spec).
func (a *API) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", api.Spec)
}
