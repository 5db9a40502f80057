// Package jsonrpc checks the envelope of one JSON-RPC 2.0 message, for
// the two readers that take messages from a peer: ACP's dispatcher (acp)
// and the MCP client's router (mcp). It decides what encoding/json would
// leave to chance: a member named twice (encoding/json keeps the last) and
// an id that JSON-RPC does not allow (encoding/json takes any value into a
// json.RawMessage, and a peer's object would be echoed back).
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/pabloagent/pablo/internal/jsonx"
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
	i := jsonx.SkipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return nil // not an object: the caller's decoder has refused it
	}
	i++
	var seen [len(members)]bool
	for {
		i = jsonx.SkipSpace(msg, i)
		if i >= len(msg) || msg[i] == '}' {
			return nil
		}
		if msg[i] == ',' {
			i = jsonx.SkipSpace(msg, i+1)
		}
		if i >= len(msg) || msg[i] != '"' {
			return nil // not valid JSON: the caller's decoder has refused it
		}
		end := jsonx.SkipString(msg, i)
		if end-1 <= i {
			return nil
		}
		name := string(msg[i+1 : end-1])
		if strings.IndexByte(name, '\\') >= 0 {
			if err := json.Unmarshal(msg[i:end], &name); err != nil {
				return nil
			}
		}
		i = jsonx.SkipSpace(msg, end)
		i = jsonx.SkipSpace(msg, i+1) // the colon
		start := i
		i = jsonx.SkipValue(msg, i)
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

// Members are the values of the members a JSON-RPC message defines, as
// written (a member not written is nil).
type Members struct {
	ID, Method, Params, Result, Error []byte
}

// Split returns the members of msg, a JSON object already known to be
// valid JSON, when it is written as peers write it: each member JSON-RPC
// defines spelled as JSON-RPC spells it (no escape, no other case) and
// written at most once, and the id, when present, a string, a number or
// null. Other members are skipped. It reports false for any other message,
// which the caller decodes and checks the general way ([CheckEnvelope]):
// Split never accepts a message CheckEnvelope refuses. The values are
// slices of msg; it allocates nothing.
func Split(msg []byte) (Members, bool) {
	var m Members
	i := jsonx.SkipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return m, false
	}
	i++
	var seen [len(members)]bool
	for {
		i = jsonx.SkipSpace(msg, i)
		if i >= len(msg) {
			return m, false
		}
		if msg[i] == '}' {
			return m, true
		}
		if msg[i] == ',' {
			i = jsonx.SkipSpace(msg, i+1)
		}
		if i >= len(msg) || msg[i] != '"' {
			return m, false
		}
		end := jsonx.SkipString(msg, i)
		if end-1 <= i {
			return m, false
		}
		name := msg[i+1 : end-1]
		i = jsonx.SkipSpace(msg, end)
		i = jsonx.SkipSpace(msg, i+1) // the colon
		start := i
		i = jsonx.SkipValue(msg, i)
		if start >= i {
			return m, false
		}
		k := -1
		for j, mem := range members {
			if string(name) == mem {
				k = j
				break
			}
		}
		if k < 0 {
			// Another spelling of a member, or one written with escapes,
			// is the general path's to judge.
			if bytes.IndexByte(name, '\\') >= 0 {
				return m, false
			}
			for _, mem := range members {
				if strings.EqualFold(string(name), mem) {
					return m, false
				}
			}
			continue
		}
		if seen[k] {
			return m, false
		}
		seen[k] = true
		v := msg[start:i:i]
		switch members[k] {
		case "id":
			switch c := v[0]; {
			case c == '"', c == '-', c >= '0' && c <= '9', c == 'n':
			default:
				return m, false
			}
			m.ID = v
		case "method":
			m.Method = v
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			m.Error = v
		}
	}
}
