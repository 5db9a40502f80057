package providers

import "unicode/utf8"

// Bounds on the shape of one JSON frame, checked before it is decoded.
const (
	maxJSONDepth      = 128
	maxJSONContainer  = 4096
	maxJSONFrameValue = 65536
)

// checkShape bounds a JSON document's nesting, the entries of any one
// container and its total value count with one pass over its bytes. It does
// not validate the grammar: the decoder does that afterwards.
func checkShape(data []byte) error {
	if !utf8.Valid(data) {
		// The decoder would silently replace invalid bytes with U+FFFD.
		return malformed("a frame is not valid UTF-8")
	}
	var stack [maxJSONDepth + 1]int
	depth, values := 0, 1
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth == maxJSONDepth {
				return malformed("a frame nests deeper than %d", maxJSONDepth)
			}
			depth++
			stack[depth] = 1
		case '}', ']':
			if depth > 0 {
				depth--
			}
		case ',':
			values++
			if values > maxJSONFrameValue {
				return malformed("a frame holds more than %d values", maxJSONFrameValue)
			}
			if depth > 0 {
				stack[depth]++
				if stack[depth] > maxJSONContainer {
					return malformed("a frame container holds more than %d entries", maxJSONContainer)
				}
			}
		}
	}
	return nil
}
