package jsonx

import "unicode/utf8"

// maxFastDepth bounds the recursion of the fast path; deeper values take the
// general path, which works iteratively over the decoder's tokens.
const maxFastDepth = 256

// isCanonical reports whether data is already exactly its own canonical
// form: one JSON value, no insignificant whitespace, object keys strictly
// increasing by bytes (so no duplicates), strings escaped minimally, valid
// UTF-8. It allocates nothing. A false answer only means the general path
// must decide: it is never wrong when it says true.
func isCanonical(data []byte) bool {
	end, ok := fastValue(data, 0, 0)
	return ok && end == len(data)
}

func fastValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxFastDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		for first := true; ; first = false {
			start := i
			end, ok := fastString(b, i, true)
			if !ok {
				return i, false
			}
			key := b[start+1 : end-1]
			if !first && string(key) <= string(prev) {
				return i, false
			}
			prev = key
			i = end
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = fastValue(b, i+1, depth+1); !ok {
				return i, false
			}
			if i >= len(b) {
				return i, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i++
		}
	case c == '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = fastValue(b, i, depth+1); !ok || i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i++
		}
	case c == '"':
		return fastString(b, i, false)
	case c == 't':
		return fastLiteral(b, i, "true")
	case c == 'f':
		return fastLiteral(b, i, "false")
	case c == 'n':
		return fastLiteral(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return fastNumber(b, i)
	}
	return i, false
}

func fastLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// fastString accepts a string in canonical escaping. Keys must hold no
// escape at all, so that their raw bytes order like their values.
func fastString(b []byte, i int, key bool) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if key || i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', 'n', 'r', 't', 'b', 'f':
				i += 2
			case 'u':
				// Only control characters without a short form use \u00xx,
				// in lowercase hex.
				if i+5 >= len(b) || b[i+2] != '0' || b[i+3] != '0' {
					return i, false
				}
				v, ok := hexNibble(b[i+4])
				w, ok2 := hexNibble(b[i+5])
				cc := v<<4 | w
				if !ok || !ok2 || cc >= 0x20 || cc == '\n' || cc == '\r' || cc == '\t' || cc == '\b' || cc == '\f' {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
	return i, false
}

func hexNibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// fastNumber accepts the JSON number grammar; numbers are canonical as
// written.
func fastNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}
