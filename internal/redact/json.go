package redact

import (
	"bytes"
	"encoding/json"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// MaskJSON returns the JSON text raw with every secret masked in the
// decoded value of each of its strings (keys included), and the number of
// masked regions; raw itself when there were none. A secret is found
// however it was escaped ("\"", "\\", "\t", "\u2028", "\u0041"…), and a
// masked string is written back escaped, so the result stays valid JSON.
func (s *Set) MaskJSON(raw []byte) ([]byte, int) {
	t := s.table()
	if bytes.IndexByte(raw, '\\') < 0 {
		// Nothing is escaped: the decoded strings are raw's own bytes, and
		// a text with no secret has no string with one.
		if r := scan(t, raw, 0, -1, false); !r.any(t) {
			return raw, 0
		}
	}
	var out []byte
	last, total := 0, 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j, escaped := i+1, false
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		if j >= len(raw) {
			break // not JSON: the caller's decoder will say so
		}
		text := raw[i+1 : j]
		if escaped {
			var str string
			if json.Unmarshal(raw[i:j+1], &str) != nil {
				i = j
				continue
			}
			text = []byte(str)
		}
		if m, n := t.mask(text); n > 0 {
			out = append(out, raw[last:i]...)
			out = jsonx.AppendString(out, string(m))
			last, total = j+1, total+n
		}
		i = j
	}
	if total == 0 {
		return raw, 0
	}
	return append(out, raw[last:]...), total
}
