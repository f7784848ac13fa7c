// Package termsafe keeps text that came from a host, a file or the cluster from driving the
// terminal it is printed on: HNS object names and IDs are whatever their creator (or the author of a
// dump handed to `plan --hns`) made them, and an escape sequence among them could rewrite the
// screen, hide lines or set the window title.
package termsafe

import (
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// Writer writes what it is given with every control character other than newline and tab, and
// every byte that is not UTF-8, replaced by a visible escape (\x1b, \x07, \u009b). Printers that
// write whole cells or lines, as kubectl's do, never see a character split across two writes.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) when everything was written.
func (t *Writer) Write(p []byte) (int, error) {
	clean := true
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if needsEscape(r, size) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return t.w.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case needsEscape(r, size) && r < 0x80:
			out = fmt.Appendf(out, `\x%02x`, r)
		case needsEscape(r, size):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// needsEscape reports whether the rune decoded from size bytes is to be escaped.
func needsEscape(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return true
	}
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029')
}
