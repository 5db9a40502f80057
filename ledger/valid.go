package ledger

import (
	"encoding/binary"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// validJSON reports whether b is exactly one JSON value with optional
// surrounding whitespace, accepting the same inputs as encoding/json.Valid
// (including its nesting limit of 10,000 and its tolerance of invalid UTF-8
// inside strings). It exists because it is several times faster than
// json.Valid on the small payloads every event carries.
func validJSON(b []byte) bool {
	v := validator{b: b}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(v.b)
}

const maxJSONDepth = 10000

type validator struct {
	b []byte
	i int
}

func (v *validator) space() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		return v.object(depth + 1)
	case c == '[':
		return v.array(depth + 1)
	case c == '"':
		return v.str()
	case c == '-' || '0' <= c && c <= '9':
		return v.number()
	case c == 't':
		return v.lit("true")
	case c == 'f':
		return v.lit("false")
	case c == 'n':
		return v.lit("null")
	}
	return false
}

func (v *validator) lit(s string) bool {
	if len(v.b)-v.i < len(s) || string(v.b[v.i:v.i+len(s)]) != s {
		return false
	}
	v.i += len(s)
	return true
}

func (v *validator) object(depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	v.i++ // '{'
	v.space()
	if v.i < len(v.b) && v.b[v.i] == '}' {
		v.i++
		return true
	}
	for {
		if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
			return false
		}
		v.space()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case '}':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) array(depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	v.i++ // '['
	v.space()
	if v.i < len(v.b) && v.b[v.i] == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case ']':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) str() bool {
	v.i++ // opening quote
	for v.i < len(v.b) {
		// Skip eight plain bytes at a time; any word holding a quote, a
		// backslash or a control byte is read byte by byte below.
		for len(v.b)-v.i >= 8 && jsonx.PlainWord(binary.LittleEndian.Uint64(v.b[v.i:])) {
			v.i += 8
		}
		if v.i >= len(v.b) {
			break
		}
		c := v.b[v.i]
		switch {
		case c == '"':
			v.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			v.i++
			if v.i >= len(v.b) {
				return false
			}
			switch v.b[v.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i++
			case 'u':
				if len(v.b)-v.i < 5 {
					return false
				}
				for _, h := range v.b[v.i+1 : v.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				v.i += 5
			default:
				return false
			}
		default:
			v.i++
		}
	}
	return false
}

func (v *validator) number() bool {
	if v.b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(v.b) {
		return false
	}
	if v.b[v.i] == '0' {
		v.i++
	} else if !v.digits() {
		return false
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if !v.digits() {
			return false
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

func (v *validator) digits() bool {
	start := v.i
	for v.i < len(v.b) && '0' <= v.b[v.i] && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i > start
}
