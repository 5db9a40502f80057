package script

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// scan walks the script's bytes once, without decoding it: it
// refuses duplicate keys, trailing data, nesting past MaxDepth and
// counts past the bounds. It checks only the structure it needs; the
// decoder that follows judges everything else about the JSON.
func scan(data []byte) error {
	sc := &scanner{data: data}
	if err := sc.value(0); err != nil {
		return err
	}
	sc.space()
	if sc.i < len(sc.data) {
		return &Error{Message: "trailing data after the script object"}
	}
	return nil
}

// scanner is one scan: the bytes, the position, the path to the current
// value and the counts so far.
type scanner struct {
	data                 []byte
	i                    int
	path                 []scanStep
	turns, deltas, calls int
	agents               int
}

// scanStep is one step of a path: an object key or an array index.
type scanStep struct {
	key   string
	index int
	isKey bool
}

func (sc *scanner) fail(format string, args ...any) error {
	var b strings.Builder
	for _, p := range sc.path {
		b.WriteByte('/')
		if p.isKey {
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p.key, "~", "~0"), "/", "~1"))
		} else {
			b.WriteString(strconv.Itoa(p.index))
		}
	}
	return &Error{Pointer: b.String(), Message: fmt.Sprintf(format, args...)}
}

func (sc *scanner) syntax() error {
	return &Error{Message: fmt.Sprintf("not JSON (offset %d)", sc.i)}
}

func (sc *scanner) space() {
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value scans one JSON value at depth.
func (sc *scanner) value(depth int) error {
	if depth > MaxDepth {
		return sc.fail("nesting deeper than %d levels", MaxDepth)
	}
	sc.space()
	if sc.i >= len(sc.data) {
		return sc.syntax()
	}
	switch sc.data[sc.i] {
	case '{':
		return sc.object(depth)
	case '[':
		return sc.array(depth)
	case '"':
		_, err := sc.str()
		return err
	}
	// A scalar: the decoder checks its spelling.
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		sc.i++
	}
	return nil
}

// str scans a string and returns its decoded text.
func (sc *scanner) str() (string, error) {
	start := sc.i
	sc.i++
	escaped := false
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case '\\':
			escaped = true
			sc.i += 2
			continue
		case '"':
			sc.i++
			raw := sc.data[start:sc.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var out string
			if err := json.Unmarshal(raw, &out); err != nil {
				return "", sc.syntax()
			}
			return out, nil
		}
		sc.i++
	}
	return "", sc.syntax()
}

// inArguments reports whether the object being scanned lies in a tool
// call's arguments (/turns/N/tool_calls/M/arguments/...), whose keys are
// the tool's and may be spelled any way.
func (sc *scanner) inArguments() bool {
	p := sc.turnsPath()
	return len(p) >= 5 && p[0].key == "turns" && p[2].key == "tool_calls" && p[4].isKey && p[4].key == "arguments"
}

// lowerName reports whether k is spelled as every field of a script is:
// lowercase ASCII letters and underscores.
func lowerName(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return k != ""
}

func (sc *scanner) object(depth int) error {
	sc.i++ // '{'
	sc.space()
	if sc.i < len(sc.data) && sc.data[sc.i] == '}' {
		sc.i++
		return nil
	}
	var keys []string
	var set map[string]bool
	for {
		sc.space()
		if sc.i >= len(sc.data) || sc.data[sc.i] != '"' {
			return sc.syntax()
		}
		key, err := sc.str()
		if err != nil {
			return err
		}
		if !sc.inArguments() && !lowerName(key) {
			// encoding/json matches a field name in any case ("Turns",
			// "TEXT"), which would let a second spelling of a key win.
			sc.path = append(sc.path, scanStep{key: key, isKey: true})
			return sc.fail("unknown field %q: field names are lowercase, spelled exactly", key)
		}
		sc.path = append(sc.path, scanStep{key: key, isKey: true})
		// Most objects have a few keys: a list, then a set past eight.
		dup := false
		if set != nil {
			dup = set[key]
			set[key] = true
		} else {
			for _, k := range keys {
				dup = dup || k == key
			}
			keys = append(keys, key)
			if len(keys) > 8 {
				set = map[string]bool{}
				for _, k := range keys {
					set[k] = true
				}
			}
		}
		if dup {
			return sc.fail("duplicate key %q", key)
		}
		sc.space()
		if sc.i >= len(sc.data) || sc.data[sc.i] != ':' {
			return sc.syntax()
		}
		sc.i++
		if err := sc.value(depth + 1); err != nil {
			return err
		}
		sc.path = sc.path[:len(sc.path)-1]
		if done, err := sc.after('}'); done || err != nil {
			return err
		}
	}
}

func (sc *scanner) array(depth int) error {
	sc.i++ // '['
	sc.space()
	if sc.i < len(sc.data) && sc.data[sc.i] == ']' {
		sc.i++
		return nil
	}
	for n := 0; ; n++ {
		sc.path = append(sc.path, scanStep{index: n})
		if err := sc.count(); err != nil {
			return err
		}
		if err := sc.value(depth + 1); err != nil {
			return err
		}
		sc.path = sc.path[:len(sc.path)-1]
		if done, err := sc.after(']'); done || err != nil {
			return err
		}
	}
}

// after reads what follows a member or an element: a comma (more follow)
// or the closing byte (done).
func (sc *scanner) after(closing byte) (done bool, err error) {
	sc.space()
	if sc.i >= len(sc.data) {
		return false, sc.syntax()
	}
	switch sc.data[sc.i] {
	case ',':
		sc.i++
		return false, nil
	case closing:
		sc.i++
		return true, nil
	}
	return false, sc.syntax()
}

// turnsPath is the current path from the turns list that holds it: the
// script's own, or an agent's (/agents/N/turns/...), which the bounds
// count together.
func (sc *scanner) turnsPath() []scanStep {
	p := sc.path
	if len(p) >= 2 && p[0].isKey && p[0].key == "agents" && !p[1].isKey {
		return p[2:]
	}
	return p
}

// count charges an array element at the current path against the bounds.
func (sc *scanner) count() error {
	if p := sc.path; len(p) == 2 && p[0].isKey && p[0].key == "agents" {
		if sc.agents++; sc.agents > MaxAgents {
			return sc.fail("more than %d agents", MaxAgents)
		}
		return nil
	}
	p := sc.turnsPath()
	if len(p) < 2 || !p[0].isKey || p[0].key != "turns" || len(sc.path) == 3 || len(p) > 4 {
		return nil
	}
	switch {
	case len(p) == 2:
		if sc.turns++; sc.turns > MaxTurns {
			return sc.fail("more than %d turns", MaxTurns)
		}
	case p[2].isKey && p[2].key == "text":
		if sc.deltas++; sc.deltas > MaxDeltas {
			return sc.fail("more than %d text deltas", MaxDeltas)
		}
	case p[2].isKey && p[2].key == "tool_calls":
		if sc.calls++; sc.calls > MaxToolCalls {
			return sc.fail("more than %d tool calls", MaxToolCalls)
		}
	}
	return nil
}
