// Package jsonrpc checks the envelope of one JSON-RPC 2.0 message, for
// the two readers that take messages from a peer: ACP's dispatcher (acp)
// and the MCP client's router (mcp). It decides what encoding/json would
// leave to chance: a member named twice (encoding/json keeps the last) and
// an id that JSON-RPC does not allow (encoding/json takes any value into a
// json.RawMessage, and a peer's object would be echoed back).
package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"
)

// ErrEnvelope marks a message whose envelope breaks JSON-RPC 2.0: a
// member it defines written twice, or an id that is not a string, a
// number or null. An *EnvelopeError says which.
var ErrEnvelope = errors.New("jsonrpc: invalid envelope")

// EnvelopeError is a message whose envelope breaks JSON-RPC 2.0. It
// matches ErrEnvelope with errors.Is.
type EnvelopeError struct {
	// Member is the member at fault: "jsonrpc", "id", "method",
	// "params", "result" or "error".
	Member string
	// Reason says what is wrong, never quoting the message's values.
	Reason string
}

func (e *EnvelopeError) Error() string { return "jsonrpc: member " + e.Member + ": " + e.Reason }

// Is reports whether target is ErrEnvelope.
func (e *EnvelopeError) Is(target error) bool { return target == ErrEnvelope }

// members are the names JSON-RPC 2.0 defines for a message object.
var members = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// CheckEnvelope checks one message, a JSON object already known to be
// valid JSON (the caller decoded it): each member JSON-RPC defines is
// written at most once, under any spelling encoding/json binds to it (it
// matches names without regard to case, so "id" and "ID" are one member
// twice), and the id, when present, is a string, a number or null. It
// reads the object's top-level members only and allocates only for a name
// written with escapes.
func CheckEnvelope(msg []byte) error {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return nil // not an object: the caller's decoder has refused it
	}
	i++
	var seen [len(members)]bool
	for {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] == '}' {
			return nil
		}
		if msg[i] == ',' {
			i = skipSpace(msg, i+1)
		}
		if i >= len(msg) || msg[i] != '"' {
			return nil // not valid JSON: the caller's decoder has refused it
		}
		end := skipString(msg, i)
		if end-1 <= i {
			return nil
		}
		name := string(msg[i+1 : end-1])
		if strings.IndexByte(name, '\\') >= 0 {
			if err := json.Unmarshal(msg[i:end], &name); err != nil {
				return nil
			}
		}
		i = skipSpace(msg, end)
		i = skipSpace(msg, i+1) // the colon
		start := i
		i = skipValue(msg, i)
		for k, m := range members {
			if !strings.EqualFold(name, m) {
				continue
			}
			if seen[k] {
				return &EnvelopeError{Member: m, Reason: "written more than once; a message names each member once"}
			}
			seen[k] = true
			if m == "id" && start < len(msg) {
				switch c := msg[start]; {
				case c == '"', c == '-', c >= '0' && c <= '9', c == 'n':
				default:
					return &EnvelopeError{Member: m, Reason: "must be a string, a number or null"}
				}
			}
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index past the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index past the value that starts at b[i]: a
// string, an object or array (strings inside them skipped whole), or a
// literal or number (up to the next delimiter).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}
