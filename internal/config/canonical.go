package config

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
)

// The deployment's canonical form. This writer is the root's canonical.go,
// copied with the code that uses it until internal/jsonx holds the one
// canonical-JSON writer.

// canonicalJSON encodes a generic tree in the pablo-config-json-v1 form:
// object keys sorted by UTF-8 bytes, array order kept, integers in exact base
// 10, strings with only '"', '\' and U+0000..U+001F escaped (lowercase
// \u00xx), no whitespace and no trailing newline.
func canonicalJSON(v any) []byte {
	return appendCanonical(nil, v)
}

func canonicalString(v any) string { return string(canonicalJSON(v)) }

func appendCanonical(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case string:
		return appendCanonicalString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // Go compares strings bytewise: UTF-8 byte order.
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, k)
			b = append(b, ':')
			b = appendCanonical(b, x[k])
		}
		return append(b, '}')
	}
	panic("pablo: canonicalJSON: unsupported type")
}

func appendCanonicalString(b []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// sha256Tag is "sha256:" and the lowercase hex SHA-256 of b: the form
// the ledger uses for result references (ledger.RefOf).
func sha256Tag(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
