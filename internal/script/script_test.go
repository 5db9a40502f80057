package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestScriptDecodingIsStrict: duplicate keys (at any depth), unknown
// fields, trailing data and nameless tool calls are refused with a typed
// *Error naming where.
func TestScriptDecodingIsStrict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, pointer, says string }{
		{`{"turns":[{"text":["a"]}],"turns":[{"text":["b"]}]}`, "/turns", "duplicate key"},
		{`{"turns":[{"text":["a"],"text":["b"]}]}`, "/turns/0/text", "duplicate key"},
		{`{"turns":[{"text":[],"tool_calls":[{"name":"fs.read","arguments":{"path":"a","path":"../../etc/passwd"}}]}]}`, "/turns/0/tool_calls/0/arguments/path", "duplicate key"},
		{`{"turns":[{"text":["a"],"txet":["b"]}]}`, "", "unknown field"},
		{`{"turns":[{"text":["a"]}]} {}`, "", "trailing data"},
		{`{"turns":[]}`, "/turns", "no turns"},
		{`{"turns":[{"tool_calls":[{"arguments":{}}]}]}`, "/turns/0/tool_calls/0/name", "needs a name"},
		{`{"turns":[{"text":["a"]}]`, "", "not JSON"},
		{`{"turns":[{"text":[],"tool_calls":[{"name":"x","arguments":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}]}]}`, "", "nesting deeper"},
	} {
		_, err := Parse([]byte(c.doc))
		var se *Error
		if !errors.As(err, &se) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: want a *Error, got %v", c.doc, err)
			continue
		}
		if (c.pointer != "" && se.Pointer != c.pointer) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%.80s: got pointer %q, %v; want %q, %q", c.doc, se.Pointer, err, c.pointer, c.says)
		}
	}
}

// scriptOf builds a script of n turns, each with one tool call, and the
// last turn's text.
func scriptOf(n int) string {
	var b strings.Builder
	b.WriteString(`{"turns":[`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"text":["step %d"],"tool_calls":[{"name":"fs.read","arguments":{"path":"evidence.md"}}]},`, i)
	}
	b.WriteString(`{"text":["done"]}]}`)
	return b.String()
}

// TestScriptBoundsAdmitTheBenchmarkAndRefuseAMillionTurns: the documented
// bounds admit a 10,000-turn script with a tool call in each turn, and
// refuse one past MaxTurns while scanning, before decoding anything.
func TestScriptBoundsAdmitTheBenchmarkAndRefuseAMillionTurns(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(scriptOf(10_000)))
	if err != nil || len(s.Turns) != 10_001 {
		t.Fatalf("10,000 turns: %v", err)
	}
	turns := `{"turns":[` + strings.Repeat(`{},`, MaxTurns) + `{}]}`
	_, err = Parse([]byte(turns))
	var se *Error
	if !errors.As(err, &se) || se.Pointer != fmt.Sprintf("/turns/%d", MaxTurns) || !strings.Contains(err.Error(), "turns") {
		t.Fatalf("one turn past the bound: %v", err)
	}
	deltas := `{"turns":[{"text":[` + strings.Repeat(`"",`, MaxDeltas) + `""]}]}`
	if _, err := Parse([]byte(deltas)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "text deltas") {
		t.Fatalf("one delta past the bound: %v", err)
	}
	big := `{"turns":[{"text":["` + strings.Repeat("x", MaxBytes) + `"]}]}`
	if _, err := Parse([]byte(big)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("past the byte bound: %v", err)
	}
}

// FuzzParse: Parse never panics; what it accepts is within
// the bounds and survives a round trip through encoding/json unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"turns":[{"text":["a","b"],"tool_calls":[{"name":"fs.read","arguments":{"path":"x"}}],"usage":{"input_tokens":1,"output_tokens":2}}]}`))
	f.Add([]byte(`{"turns":[{"error":"rate_limited","delivery":"not_sent"}]}`))
	f.Add([]byte(` {"turns" : [ {"text" : ["a\"\\", "\u0041"] , "tool_calls":[{"name":"x","arguments":[true,null,-1.5e3,{}]}]} ] } `))
	f.Add([]byte(`{"turns":[{"text":["a"],"text":["b"]}]}`))
	f.Add([]byte(`{"turns":[{"tool_calls":[{"name":"x","arguments":{"a":{"b":[1,2,{"a":1,"a":2}]}}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("untyped error %v", err)
			}
			if strings.HasPrefix(err.Error(), "script: not JSON") && json.Valid(data) {
				t.Fatalf("the scan refused valid JSON: %v", err)
			}
			return
		}
		calls, deltas := 0, 0
		for _, turn := range s.Turns {
			calls += len(turn.ToolCalls)
			deltas += len(turn.Text)
		}
		if len(s.Turns) > MaxTurns || calls > MaxToolCalls || deltas > MaxDeltas {
			t.Fatalf("bounds passed: %d turns, %d calls, %d deltas", len(s.Turns), calls, deltas)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Parse(again)
		if err != nil {
			t.Fatalf("re-encoded script refused: %v\n%s", err, again)
		}
		if b, _ := json.Marshal(s2); string(b) != string(again) {
			t.Fatalf("round trip changed the script:\n%s\n%s", again, b)
		}
	})
}

// A field name spelled in another case is a second spelling of the same
// key to encoding/json, which would let the later one win: it is refused.
// Tool-call arguments keep their own spelling ("A" and "a" are two keys).
func TestScriptFieldNamesAreCaseSensitive(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, pointer string }{
		{`{"turns":[{"text":["a"]}],"Turns":[{"text":["b"]}]}`, "/Turns"},
		{`{"turns":[{"text":["a"],"TEXT":["b"]}]}`, "/turns/0/TEXT"},
		{`{"turns":[{"text":[],"tool_calls":[{"name":"fs.read","Arguments":{"path":"../x"},"arguments":{"path":"a"}}]}]}`, "/turns/0/tool_calls/0/Arguments"},
		{`{"turns":[{"text":[],"usage":{"input_tokens":1,"Input_Tokens":9}}]}`, "/turns/0/usage/Input_Tokens"},
	} {
		_, err := Parse([]byte(c.doc))
		var se *Error
		if !errors.As(err, &se) || se.Pointer != c.pointer || !strings.Contains(se.Message, "spelled exactly") {
			t.Errorf("%s: got %v", c.doc, err)
		}
	}
	s, err := Parse([]byte(`{"turns":[{"text":[],"tool_calls":[{"name":"x","arguments":{"A":1,"a":{"B-2":[{"Z":0}]}}}]}]}`))
	if err != nil || string(s.Turns[0].ToolCalls[0].Arguments) != `{"A":1,"a":{"B-2":[{"Z":0}]}}` {
		t.Fatalf("arguments: %v", err)
	}
}
