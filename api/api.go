// Package api holds leasegate's HTTP contract: the OpenAPI 3.1 document,
// the problem documents with the one table from error code to status, and
// the request context key of the caller. The domain (the module root)
// speaks no HTTP; the gateway (handlers, server, auth) and the Go client
// both read the wire from here.
//
// The gateway serves the OpenAPI document at GET /openapi.yaml, and the
// handlers tests validate real requests and responses against it, so it
// stays true.
package api

import _ "embed"

// Spec is the OpenAPI 3.1 description of every route (openapi.yaml).
//
//go:embed openapi.yaml
var Spec []byte
