package opsui_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
)

// userCells returns the text of every user cell of the page, in order.
var userCell = regexp.MustCompile(`<td class="user"[^>]*><code>(.*?)</code></td>`)

func opsPageAs(t *testing.T, env *apptest.App, target string) string {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.Header.Set("Authorization", "Bearer "+loginOpsKey)
	rec := httptest.NewRecorder()
	env.E.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: got %d, want 200: %s", target, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// Invisible and look-alike characters in user ids are shown as \u{XXXX}
// in a span of class "esc"; ordinary text is shown as it is.
func TestOpsPageShowsInvisibleCharactersEscaped(t *testing.T) {
	t.Parallel()
	esc := func(hex string) string {
		return `<span class="esc" title="U+` + hex + `">\u{` + hex + `}</span>`
	}
	cases := []struct{ name, id, want string }{
		{"plain ASCII", "plain-user_1", "plain-user_1"},
		{"Latin with diacritics", "müller", "müller"},
		{"CJK", "用户", "用户"},
		{"a decomposed accent after its letter", "cafe\u0301", "cafe\u0301"},
		{"a zero width space", "adm\u200bin", "adm" + esc("200B") + "in"},
		{"a right-to-left override", "\u202egpj.exe", esc("202E") + "gpj.exe"},
		{"marks and isolates", "a\u200eb\u200fc\u2066d\u2069", "a" + esc("200E") + "b" + esc("200F") + "c" + esc("2066") + "d" + esc("2069")},
		{"a byte order mark", "\ufeffroot", esc("FEFF") + "root"},
		{"a combining mark at the start", "\u0301root", esc("0301") + "root"},
		{"a no-break space", "bob\u00a0smith", "bob" + esc("00A0") + "smith"},
		{"a Hangul filler", "x\u3164", "x" + esc("3164")},
		{"a trailing space", "carol ", "carol" + esc("0020")},
		{"a tag character", "eve\U000E0041", "eve" + esc("E0041")},
		{"markup", `<b>&"`, `&lt;b&gt;&amp;&#34;`},
	}
	env := newLoginEnv(t, handlers.DefaultConfig())
	for _, tc := range cases {
		flagInTenant(t, env.E, tc.id)
	}
	body := opsPageAs(t, env, "/ops/")
	var cells []string
	for _, m := range userCell.FindAllStringSubmatch(body, -1) {
		cells = append(cells, m[1])
	}
	for _, tc := range cases {
		t.Run(tc.name+" is shown as "+tc.want, func(t *testing.T) {
			for _, c := range cells {
				if c == tc.want {
					return
				}
			}
			t.Errorf("got user cells %q, want one %q", cells, tc.want)
		})
	}

	t.Run("the forms still post the id as it is", func(t *testing.T) {
		if !strings.Contains(body, `name="user_id" value="adm`+"\u200b"+`in"`) {
			t.Error("got no form carrying the raw id")
		}
	})
	t.Run("the flash message escapes its user too", func(t *testing.T) {
		page := opsPageAs(t, env, "/ops/?msg=cleared&user="+url.QueryEscape("adm\u200bin"))
		if !strings.Contains(page, "<code>adm"+esc("200B")+"in</code>") {
			t.Error("got the flash user unescaped")
		}
	})
	t.Run("the stylesheet styles the escapes", func(t *testing.T) {
		req := httptest.NewRequest("GET", "/ops/assets/ops.css", nil)
		rec := httptest.NewRecorder()
		env.E.ServeHTTP(rec, req)
		if !strings.Contains(rec.Body.String(), ".esc") {
			t.Error("got no .esc rule")
		}
	})
}
