// Package textx cuts text to a byte bound without splitting a character,
// for the messages, names and snippets Pablo bounds before it records or
// shows them.
package textx

import "unicode/utf8"

// Cut returns the longest prefix of s of at most n bytes that ends on a
// character boundary.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Shorten is Cut with an ellipsis appended when s was cut, so a reader can
// tell a shortened text from a whole one.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + "…"
}
