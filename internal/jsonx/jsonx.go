// Package jsonx is Pablo's one canonical JSON: one string encoder, one
// writer of a value's canonical form ([AppendCanonical]) and one
// canonicalizer of JSON text ([Canonical]). The ledger's result references,
// the engine's hand-built event payloads, trace lines, MCP pins and the
// deployment fingerprint all come out of it, so a payload the engine writes
// is already canonical for the ledger. JSON validation is encoding/json's
// Valid: there is no second validator.
//
// Canonical means: object keys sorted by their UTF-8 bytes, array order
// kept, no insignificant whitespace, numbers exactly as written (or, for Go
// integers, in base 10). Strings come in two escapings ([Escaping]),
// because two families of persisted hashes were computed with them and
// both must stay stable: [EscapeShort] for results, events and schemas,
// [EscapeConfig] (the reference's pablo-config-json-v1) for deployment
// fingerprints. They agree on every string without a control character or
// invalid UTF-8.
package jsonx

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Escaping chooses how a string is escaped in canonical JSON.
type Escaping uint8

const (
	// EscapeShort escapes '"' and '\', writes \n \r \t \b \f in
	// their short forms and the other control characters as lowercase
	// \u00xx, keeps everything else as raw UTF-8 and writes invalid UTF-8
	// as U+FFFD ([AppendString]). Result references (sha256 of a result's
	// canonical form), ledger records, event payloads, trace lines and
	// schema pins use it.
	EscapeShort Escaping = iota
	// EscapeConfig is the reference's pablo-config-json-v1 string form:
	// only '"', '\' and U+0000..U+001F are escaped, the control
	// characters all as lowercase \u00xx (a newline is \u000a), and every
	// other byte is kept as it is ([AppendConfigString]). Deployment
	// fingerprints and the digests of config sources use it.
	EscapeConfig
)

// Append appends s as a JSON string in escaping e.
func (e Escaping) Append(out []byte, s string) []byte {
	if e == EscapeConfig {
		return AppendConfigString(out, s)
	}
	return AppendString(out, s)
}

// AppendConfigString appends s as a JSON string in the pablo-config-json-v1
// escaping ([EscapeConfig]).
func AppendConfigString(out []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		if c == '"' || c == '\\' {
			out = append(out, '\\', c)
		} else {
			out = append(out, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// plainWord reports whether none of the eight bytes of x (read little
// endian) is a quote, a backslash or a control byte below 0x20: bytes a JSON
// string holds as they are. It uses the classic "has zero byte" tricks: it
// never says true wrongly, and a false alarm only costs a byte-wise look.
func plainWord(x uint64) bool {
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
func AppendString(out []byte, s string) []byte { return appendString(out, s) }

// AppendBytes is [AppendString] of string(b), without the conversion.
func AppendBytes(out []byte, b []byte) []byte { return appendString(out, b) }

func appendString[S string | []byte](out []byte, s S) []byte {
	const hexdigits = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		// Plain ASCII goes eight bytes at a time.
		for len(s)-i >= 8 {
			x := le64(s[i : i+8])
			if x&0x8080808080808080 != 0 || !plainWord(x) {
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
			// At most four bytes, converted on the stack.
			r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
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
func le64[S string | []byte](s S) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Marshal is json.Marshal without HTML escaping: '<', '>', '&', U+2028 and
// U+2029 stay as written, in strings and in every json.RawMessage v
// holds (encoding/json compacts a RawMessage with the same escaping). A
// record that carries canonical bytes, such as a result under its content
// address, must be written with it, or it reads back as other bytes.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
