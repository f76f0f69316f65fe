package opsui

import "testing"

func TestVisibleEscapesWhatCannotBeSeen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a b", "a b"},
		{" ", `<span class="esc" title="U+0020">\u{0020}</span>`},
		{"a\xffb", `a<span class="esc" title="byte 0xFF">\x{FF}</span>b`},
		{"\u2028", `<span class="esc" title="U+2028">\u{2028}</span>`},
		{"\u3000", `<span class="esc" title="U+3000">\u{3000}</span>`},
		{"\u2800", `<span class="esc" title="U+2800">\u{2800}</span>`},
		{"\U000F0000", `<span class="esc" title="U+F0000">\u{F0000}</span>`},
		{"x\u20dd", "x\u20dd"},
		{"\u20ddx", `<span class="esc" title="U+20DD">\u{20DD}</span>x`},
		{"<\u200b>", `&lt;<span class="esc" title="U+200B">\u{200B}</span>&gt;`},
		{`\u{200B}`, `\u{200B}`},
	} {
		if got := string(visible(tc.in)); got != tc.want {
			t.Errorf("visible(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}
