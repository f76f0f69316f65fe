package server

import "errors"

// ErrConfig marks a configuration the gateway refuses before it serves:
// a value out of range, a combination that is not allowed (no keys or
// the embedded Redis on a non-loopback address), a key file that holds no
// key. cmd/leasegate exits 2 on it, as on a bad flag
// (docs/configuration.md, "Exit status").
var ErrConfig = errors.New("server: configuration")
