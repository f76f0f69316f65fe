package opsui

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/handlers"
)

// The "What if" page (GET /ops/whatif): a form per lock whose fields are
// a candidate policy's, answered with POST /abuse/backtest's summary and
// lists (docs/abuse.md, "Backtesting a policy"). A backtest changes
// nothing, so the form is a GET: no script, no CSRF token, a URL an
// operator can share.

var whatIfPage = template.Must(template.Must(opsPage.Clone()).ParseFS(opsFiles, "opspage/whatif.html"))

// whatIfFields are the form's candidate fields, as the policy file names
// them; "" leaves a field as the policy in force has it.
var whatIfFields = []string{"max_attempts", "ban_after_flags", "ban_seconds", "factor", "max_ban_seconds", "rolling_window_seconds", "shadow"}

type whatIfView struct {
	opsView
	Form     map[string]string
	Problems []leasegate.FieldError
	Result   *leasegate.Backtest
	Lists    []whatIfList
}

type whatIfList struct {
	Title string
	leasegate.BacktestList
}

func (a *UI) whatIf(c echo.Context) error {
	q := c.QueryParams()
	v := whatIfView{opsView: opsView{
		HasLocks: a.deps.Operator != nil, Tenant: handlers.Principal(c).Tenant,
		Operator: handlers.Principal(c).Actor(), CSRF: a.csrfToken(c), Session: viaSession(c),
	}, Form: map[string]string{}}
	for _, f := range append([]string{"lock", "hours"}, whatIfFields...) {
		v.Form[f] = q.Get(f)
	}
	if v.Form["lock"] == "" {
		return render(c, http.StatusOK, whatIfPage, "whatif.html", v)
	}
	bq := leasegate.BacktestQuery{Lock: v.Form["lock"]}
	pol := map[string]any{}
	for _, f := range whatIfFields {
		s := v.Form[f]
		switch {
		case s == "":
		case f == "shadow":
			pol[f] = s == "on"
		case f == "factor":
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				v.Problems = append(v.Problems, leasegate.FieldError{Field: "policy." + f, Message: "must be a number"})
			}
			pol[f] = x
		default:
			n, err := strconv.Atoi(s)
			if err != nil {
				v.Problems = append(v.Problems, leasegate.FieldError{Field: "policy." + f, Message: "must be a whole number"})
			}
			pol[f] = n
		}
	}
	if h := v.Form["hours"]; h != "" {
		n, err := strconv.ParseFloat(h, 64)
		if err != nil || n <= 0 {
			v.Problems = append(v.Problems, leasegate.FieldError{Field: "hours", Message: "must be a positive number of hours"})
		} else {
			bq.Since = time.Now().Add(-time.Duration(n * float64(time.Hour)))
		}
	}
	bq.Policy, _ = json.Marshal(pol) // numbers, booleans: never fails
	status := http.StatusOK
	if len(v.Problems) == 0 {
		ctx, cancel := a.opContext(c)
		defer cancel()
		bt, err := a.deps.Backtests.Backtest(ctx, v.Tenant, bq)
		var le *leasegate.Error
		switch {
		case errors.As(err, &le) && le.Code == leasegate.CodeValidation:
			v.Problems = le.Fields
		case err != nil:
			return err
		default:
			v.Result = &bt
			for _, ch := range leasegate.BacktestChanges {
				t := ch.String()
				v.Lists = append(v.Lists, whatIfList{strings.ToUpper(t[:1]) + t[1:], *bt.List(ch)})
			}
		}
	}
	if len(v.Problems) > 0 {
		status = http.StatusUnprocessableEntity
	}
	return render(c, status, whatIfPage, "whatif.html", v)
}
