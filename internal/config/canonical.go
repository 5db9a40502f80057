package config

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// canonicalJSON encodes a generic tree in the pablo-config-json-v1 form:
// object keys sorted by UTF-8 bytes, array order kept, integers in exact base
// 10, strings with only '"', '\' and U+0000..U+001F escaped (lowercase
// \u00xx), no whitespace and no trailing newline: jsonx's canonical writer
// in its EscapeConfig escaping, which fingerprints have always used.
func canonicalJSON(v any) []byte {
	return jsonx.AppendCanonical(nil, v, jsonx.EscapeConfig)
}

func canonicalString(v any) string { return string(canonicalJSON(v)) }

// sha256Tag is "sha256:" and the lowercase hex SHA-256 of b: the form
// the ledger uses for result references (ledger.RefOf).
func sha256Tag(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
