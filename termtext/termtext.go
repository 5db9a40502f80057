// Package termtext escapes text a terminal shows so the terminal never acts
// on it: what a model, a tool or a remote peer wrote can carry escape
// sequences (a clipboard write, a cleared screen, a bidi override that
// reorders an approval prompt), and a host that prints such text must
// print it escaped. [Printable] makes one line of a value (an approval
// prompt's fields); [AppendPrintable] with lines keeps newlines and tabs
// (a model's answer); [Stream] escapes a text that arrives in pieces, a
// model's deltas, so a sequence split across pieces is escaped all the same.
//
// The reference CLI escapes every byte it writes to a terminal through this
// package; a host with its own terminal front end uses the same.
package termtext

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Printable returns s as one line a terminal shows and never acts on: every
// rune that is not printable (C0 and C1 controls such as ESC and CSI, DEL,
// format characters such as the bidi overrides and isolates, zero-width
// characters, line and paragraph separators, spaces other than U+0020,
// surrogates, private-use and unassigned code points; newline and tab
// too) is written as its escape, \u009b or \U000e0001. An invalid byte
// reads as U+FFFD. The approval prompt shows every value of a request
// through it.
func Printable(s string) string {
	return string(AppendPrintable(nil, s, false))
}

// AppendPrintable appends s to dst escaped as [Printable] escapes it. With
// lines, newlines, tabs and the Unicode space separators are kept, so a
// text keeps its lines and its spacing: what `pablo run` writes to a
// terminal of the text a model wrote.
func AppendPrintable(dst []byte, s string, lines bool) []byte {
	return appendPrintable(dst, s, lines, false)
}

// appendPrintable is AppendPrintable; with json, a rune above the BMP is
// escaped as JSON escapes it, a UTF-16 surrogate pair.
func appendPrintable(dst []byte, s string, lines, json bool) []byte {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == ' ' || unicode.IsPrint(r) || lines && (r == '\n' || r == '\t' || unicode.Is(unicode.Zs, r)) {
			dst = utf8.AppendRune(dst, r)
			continue
		}
		if json && r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			dst = appendEscape(appendEscape(dst, r1), r2)
			continue
		}
		dst = appendEscape(dst, r)
	}
	return dst
}

// appendEscape writes r as \uXXXX, or \UXXXXXXXX above the BMP.
func appendEscape(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	digits := 4
	dst = append(dst, '\\', 'u')
	if r > 0xffff {
		digits = 8
		dst[len(dst)-1] = 'U'
	}
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		dst = append(dst, hex[(r>>shift)&0xf])
	}
	return dst
}

// Stream escapes a text that arrives in pieces (a model's stream of
// deltas) as AppendPrintable with lines does. Escaping goes rune by rune,
// so a control sequence split across pieces is escaped all the same; a
// rune whose bytes are split across pieces is held back until the rest
// arrives, so it is never taken for invalid bytes. Its zero value is ready
// to use.
type Stream struct {
	// JSON writes every escape as a JSON string escape: a rune above the
	// BMP as its UTF-16 surrogate pair (\udb40\udc01, not \U000e0001). A
	// JSON document escaped so is the same document, its strings the same
	// values: every rune escaped can only stand inside a string (JSON's
	// whitespace as Go writes it, newline and space, passes), and \uXXXX there
	// means the rune itself.
	JSON bool
	held string // the start of a rune the last piece ended in
}

// Append appends piece, escaped, to dst. The bytes of an incomplete rune
// at its end are held for the next piece.
func (t *Stream) Append(dst []byte, piece string) []byte {
	if t.held != "" {
		piece, t.held = t.held+piece, ""
	}
	// An incomplete rune can only start in the last UTFMax-1 bytes.
	for back := 1; back < utf8.UTFMax && back <= len(piece); back++ {
		at := len(piece) - back
		if !utf8.RuneStart(piece[at]) {
			continue
		}
		if piece[at] >= utf8.RuneSelf && !utf8.FullRuneInString(piece[at:]) {
			piece, t.held = piece[:at], piece[at:]
		}
		break
	}
	return appendPrintable(dst, piece, true, t.JSON)
}

// Flush appends what is held back, an incomplete rune at the end of the
// text, as U+FFFD, and empties t.
func (t *Stream) Flush(dst []byte) []byte {
	held := t.held
	t.held = ""
	return appendPrintable(dst, held, true, t.JSON)
}
