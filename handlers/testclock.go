package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// maxClockAdvance bounds one POST /ops/test-clock: a year, far past any
// TTL, ban or window the gateway accepts.
const maxClockAdvance = 366 * 24 * time.Hour

// advanceClock moves the test store's clock forward by advance_ms
// (Deps.TestClock; the route exists only on a gateway started with
// --embedded-redis-test-clock, docs/testing.md) and answers the store's
// time after the move.
func (a *API) advanceClock(c echo.Context) error {
	fields, err := a.readFields(c, "advance_ms")
	if err != nil {
		return err
	}
	var ck checker
	onlyQuery(&ck, c.QueryParams())
	ms, _ := ck.intField(fields, "advance_ms", 1, maxClockAdvance.Milliseconds(), true)
	if err := ck.err(); err != nil {
		return err
	}
	now, err := a.deps.TestClock(time.Duration(ms) * time.Millisecond)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, map[string]string{"now": now.UTC().Format(time.RFC3339Nano)})
}
