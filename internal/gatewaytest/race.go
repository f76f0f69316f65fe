//go:build race

package gatewaytest

// raceEnabled: this binary runs with the race detector (Binary builds
// the gateway with it too).
const raceEnabled = true
