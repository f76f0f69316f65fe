// Package apptest is the test fixture of the gateway in process: the
// domain services wired on a Redis backend (redislock.NewService,
// abuse.Service, auth.Keyring and auth.Sessions), the Echo app of
// handlers.New (NewApp, App.Instance for a second gateway on the same
// services), and the one request helper, Do (Serve for a prepared
// request), with the assertions on its Answer: Want (status), Problem and
// Fields (RFC 9457 problem with its slug), Slug, HeaderIs, JSON (strict
// decode) and Map. StartMem and Mem.Report give a memory benchmark its
// heap, stack and goroutines per object.
//
// The backend is a redistest.Backend: redistest.OnMini (miniredis with a
// clock the test moves: Advance, SetTime) or redistest.OnRedis (a real
// redis-server on a free port), or both with redistest.EachBackend. The
// backend lives in internal/redistest, not here, because this package
// imports handlers, abuse and redislock, and those packages' own tests
// need the backend too.
//
// Every test that drives routes through e.ServeHTTP uses this package:
// handlers' (as handlers_test), and server's wiring tests (auth in front
// of the routes, tenant isolation on both backends). auth's own tests do
// not, so auth never depends on handlers, not even in tests.
// internal/gatewaytest, above it, runs the whole server on a socket for
// the client, the CLI and load tests.
package apptest
