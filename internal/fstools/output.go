package fstools

import (
	"encoding/json"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// checkOutput enforces the bound on a payload's JSON serialization. A cheap
// upper bound on the serialized size settles the common case; only a payload
// whose bound exceeds max is serialized to measure it exactly, so escaping
// can never slip past the limit.
func checkOutput(id authority.ID, payload any, max int64, limitName string) error {
	if b, ok := payload.(interface{ jsonUpperBound() int64 }); ok && b.jsonUpperBound() <= max {
		return nil
	}
	out, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("%s: encode result: %w", id, err)
	}
	if int64(len(out)) > max {
		return &LimitError{Tool: id, Kind: ToolOutputBytes, Limit: limitName, Max: max}
	}
	return nil
}

// jsonStringUpper bounds the JSON encoding of s, quotes included. It assumes
// s is valid UTF-8, which every payload string is by construction (file text
// is validated, paths are checked). Each byte that encoding/json may escape
// grows to at most six bytes: control bytes, '"', '\\', the HTML-escaped
// '<', '>', '&', and 0xE2, the lead byte of U+2028 and U+2029.
func jsonStringUpper(s string) int64 {
	n := int64(len(s)) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&', c == 0xE2:
			n += 5
		}
	}
	return n
}

// The fixed parts of each payload: member names, punctuation, numbers of at
// most 20 digits, booleans and the 64-hex revision, rounded up.
const (
	fixedReadBytes   = 256
	fixedListBytes   = 128
	fixedEntryBytes  = 40
	fixedSearchBytes = 128
	fixedMatchBytes  = 80
	fixedWriteBytes  = 256
)

func (r *ReadResult) jsonUpperBound() int64 {
	return fixedReadBytes + jsonStringUpper(r.Path) + jsonStringUpper(r.Text)
}

func (r *ListResult) jsonUpperBound() int64 {
	n := fixedListBytes + jsonStringUpper(r.Path)
	for _, e := range r.Entries {
		n += fixedEntryBytes + jsonStringUpper(e.Path)
	}
	return n
}

func (r *SearchResult) jsonUpperBound() int64 {
	n := fixedSearchBytes + jsonStringUpper(r.Path)
	for _, m := range r.Matches {
		n += fixedMatchBytes + jsonStringUpper(m.Path) + jsonStringUpper(m.Text)
	}
	return n
}

func (r *WriteResult) jsonUpperBound() int64 {
	return fixedWriteBytes + jsonStringUpper(r.Path)
}
