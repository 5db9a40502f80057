// Package jsonx holds the one JSON string encoder that the ledger's
// canonical form and the engine's hand-built payloads share, so a payload the
// engine writes is already canonical for the ledger.
package jsonx

import "unicode/utf8"

// PlainWord reports whether none of the eight bytes of x (read little
// endian) is a quote, a backslash or a control byte below 0x20: bytes a JSON
// string holds as they are. It uses the classic "has zero byte" tricks: it
// never says true wrongly, and a false alarm only costs a byte-wise look.
func PlainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - ones*0x20) &^ x & highs
	q := x ^ ones*'"'
	b := x ^ ones*'\\'
	return below|(q-ones)&^q&highs|(b-ones)&^b&highs == 0
}

// AppendString appends s as a JSON string in canonical escaping: '"' and '\'
// escaped, the short forms \n \r \t \b \f, \u00xx (lowercase) for the other
// control characters, everything else as raw UTF-8; invalid UTF-8 becomes
// U+FFFD.
func AppendString(out []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		// Plain ASCII goes eight bytes at a time.
		for len(s)-i >= 8 {
			x := le64(s[i : i+8])
			if x&0x8080808080808080 != 0 || !PlainWord(x) {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
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

// le64 reads the first eight bytes of s little endian (the compiler merges
// the loads into one).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
