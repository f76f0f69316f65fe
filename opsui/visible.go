package opsui

import (
	"html/template"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// visible renders s as HTML text in which nothing is invisible or passes
// for something else: every rune a reader could not see, or could mistake
// for another string, is shown as a \u{XXXX} escape (upper-case hex, at
// least four digits) in a <span class="esc" title="U+XXXX">, which the
// stylesheet sets apart; the rest is HTML-escaped as html/template would.
// Plain ASCII and ordinary text in any script ("müller", "用户", an accent
// after its letter) are shown unchanged. Escaped are (docs/abuse.md):
//
//   - format characters (Cf: U+200B..U+200F, the bidi embeddings and
//     overrides U+202A..U+202E, the isolates U+2066..U+2069, U+FEFF, the
//     tag characters U+E0000.., ...) and every other rune that is not
//     graphic (controls, surrogates, private use, unassigned, U+2028/9);
//   - spaces other than U+0020 (U+00A0, U+3000, ...), and U+0020 at
//     either end, where it cannot be seen;
//   - runes Unicode lists as ignorable by default although graphic (the
//     Hangul fillers U+115F, U+1160, U+3164, U+FFA0, U+034F, ...) and the
//     blank braille pattern U+2800;
//   - a combining mark at the start, which has no letter to sit on and
//     would be drawn over whatever precedes the id;
//   - bytes that are not UTF-8, as \x{XX}.
//
// Forms and attributes keep the id as it is: only what is read is escaped.
func visible(s string) template.HTML {
	var b strings.Builder
	start := 0 // s[start:i] is plain text not yet written
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		first, last := i == 0, i+size == len(s)
		esc := ""
		switch {
		case r == utf8.RuneError && size == 1:
			esc = `\x{` + upperHex(rune(s[i]), 2) + `}`
		case hidden(r, first, last):
			esc = `\u{` + upperHex(r, 4) + `}`
		}
		if esc != "" {
			b.WriteString(template.HTMLEscapeString(s[start:i]))
			title := "U+" + upperHex(r, 4)
			if size == 1 && r == utf8.RuneError {
				title = "byte 0x" + upperHex(rune(s[i]), 2)
			}
			b.WriteString(`<span class="esc" title="` + title + `">` + esc + `</span>`)
			start = i + size
		}
		i += size
	}
	b.WriteString(template.HTMLEscapeString(s[start:]))
	return template.HTML(b.String())
}

// hidden reports whether r, at the start (first) or end (last) of a
// string, is to be shown escaped (visible).
func hidden(r rune, first, last bool) bool {
	switch {
	case r == ' ':
		return first || last
	case unicode.Is(unicode.Cf, r), !unicode.IsGraphic(r):
		return true
	case unicode.Is(unicode.Zs, r):
		return true
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), r == '\u2800':
		return true
	case first && unicode.Is(unicode.M, r):
		return true
	}
	return false
}

// upperHex is r in upper-case hex with at least min digits.
func upperHex(r rune, min int) string {
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	if len(h) < min {
		h = strings.Repeat("0", min-len(h)) + h
	}
	return h
}
