//go:build race

package faults

// raceBuild: these tests run with the race detector, and so do the
// gateways they start (gatewaytest.Binary), which then share the tests'
// compiled packages.
const raceBuild = true
