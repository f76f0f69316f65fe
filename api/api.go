// Package api holds leasegate's HTTP contract as an OpenAPI 3.1 document.
// The gateway serves it at GET /openapi.yaml, and the handlers tests
// validate real requests and responses against it, so it stays true.
package api

import _ "embed"

// Spec is the OpenAPI 3.1 description of every route (openapi.yaml).
//
//go:embed openapi.yaml
var Spec []byte
