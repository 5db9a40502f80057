package fstools

import (
	"encoding/json"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// checkOutput enforces the bound on a payload's JSON serialization. Cheap
// upper bounds on the serialized size settle the common case: first six
// bytes for every string byte (no scan at all), then a scan that counts the
// bytes encoding/json may escape. Only a payload whose bounds both exceed
// max is serialized and measured exactly, so escaping can never slip past
// the limit.
func checkOutput(id authority.ID, payload any, max int64, limitName string) error {
	if b, ok := payload.(bounded); ok {
		if b.jsonBound(crudeStringUpper) <= max {
			return nil
		}
		if b.jsonBound(newEscapable().upper) <= max {
			return nil
		}
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

// bounded is a payload that can bound its JSON size given a bound for each
// of its strings.
type bounded interface {
	jsonBound(str func(string) int64) int64
}

// crudeStringUpper bounds the JSON encoding of any string: every byte may
// become a six-byte escape, plus the quotes.
func crudeStringUpper(s string) int64 { return 6*int64(len(s)) + 2 }

// escapable marks the bytes encoding/json may escape in valid UTF-8: control
// bytes, '"', '\\', the HTML-escaped '<', '>', '&', and 0xE2, the lead byte of
// U+2028 and U+2029. Each grows to at most six bytes.
type escapable [256]bool

func newEscapable() *escapable {
	var e escapable
	for c := range 256 {
		e[c] = c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c == 0xE2
	}
	return &e
}

// upper bounds the JSON encoding of s, quotes included. It assumes s is
// valid UTF-8, which every payload string is by construction (file text is
// validated, paths are checked).
func (e *escapable) upper(s string) int64 {
	n := int64(len(s)) + 2
	for i := 0; i < len(s); i++ {
		if e[s[i]] {
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

func (r *ReadResult) jsonBound(str func(string) int64) int64 {
	return fixedReadBytes + str(r.Path) + str(r.Text)
}

func (r *ListResult) jsonBound(str func(string) int64) int64 {
	n := fixedListBytes + str(r.Path)
	for _, e := range r.Entries {
		n += fixedEntryBytes + str(e.Path)
	}
	return n
}

func (r *SearchResult) jsonBound(str func(string) int64) int64 {
	n := fixedSearchBytes + str(r.Path)
	for _, m := range r.Matches {
		n += fixedMatchBytes + str(m.Path) + str(m.Text)
	}
	return n
}

func (r *WriteResult) jsonBound(str func(string) int64) int64 {
	return fixedWriteBytes + str(r.Path)
}
