// Package jsonx holds the one JSON string encoder that the ledger's
// canonical form and the engine's hand-built payloads share, so a payload the
// engine writes is already canonical for the ledger.
package jsonx

import "unicode/utf8"

// AppendString appends s as a JSON string in canonical escaping: '"' and '\'
// escaped, the short forms \n \r \t \b \f, \u00xx (lowercase) for the other
// control characters, everything else as raw UTF-8; invalid UTF-8 becomes
// U+FFFD.
func AppendString(out []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, s[start:i]...)
				out = append(out, "\ufffd"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		default:
			out = append(out, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
		}
		i++
		start = i
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
