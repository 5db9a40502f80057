package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const formRequest = `{"mode":"form","message":"Deploy with key sk-live-SECRET?","requestedSchema":{"type":"object",
"properties":{"name":{"type":"string","title":"Name","default":"John Doe"},"age":{"type":"integer","minimum":0,"default":30},
"env":{"type":"string","enum":["dev","prod"],"default":"dev"},"ok":{"type":"boolean"}},"required":["ok"]}}`

func elicitingSession(fn ElicitFunc) *session {
	s := newSession("srv")
	s.elicit = fn
	s.mask = func(v string) string { return strings.ReplaceAll(v, "sk-live-SECRET", "[redacted]") }
	return s
}

// With no channel to ask, an elicitation is declined, never accepted on
// the user's behalf.
func TestElicitationWithoutAChannelIsDeclined(t *testing.T) {
	t.Parallel()
	res, e := elicitingSession(nil).serve(context.Background(), "elicitation/create", json.RawMessage(formRequest))
	if e != nil || string(res) != `{"action":"decline"}` {
		t.Fatalf("got %s %v, want a decline", res, e)
	}
}

// The channel sees the form validated and masked; an accepted answer gets
// the form's defaults for what it left out.
func TestElicitationReachesTheChannelMaskedAndDefaultsFillTheAnswer(t *testing.T) {
	t.Parallel()
	var seen Elicitation
	s := elicitingSession(func(_ context.Context, req Elicitation) (ElicitationResult, error) {
		seen = req
		return ElicitationResult{Action: ElicitAccept, Content: map[string]any{"ok": true, "age": 41}}, nil
	})
	s.inflight = "deploy"
	res, e := s.serve(context.Background(), "elicitation/create", json.RawMessage(formRequest))
	if e != nil {
		t.Fatal(e.Message)
	}
	if strings.Contains(seen.Message, "sk-live-SECRET") || seen.Server != "srv" || seen.Tool != "mcp/srv/deploy" || len(seen.Fields) != 4 {
		t.Fatalf("the channel saw %+v", seen)
	}
	var got struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	json.Unmarshal(res, &got)
	if got.Action != "accept" || got.Content["name"] != "John Doe" || got.Content["env"] != "dev" || got.Content["age"] != float64(41) || got.Content["ok"] != true {
		t.Fatalf("answered %s", res)
	}
}

// An answer that does not fit the form, or a channel that fails, declines:
// the server never receives a value outside its own schema.
func TestElicitationAnswerOutsideTheFormDeclines(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]map[string]any{
		"ExtraField":      {"ok": true, "password": "x"},
		"WrongType":       {"ok": "yes"},
		"NotAChoice":      {"ok": true, "env": "staging"},
		"BelowMinimum":    {"ok": true, "age": -1},
		"NotAnInteger":    {"ok": true, "age": 1.5},
		"MissingRequired": {"name": "x"},
	} {
		s := elicitingSession(func(context.Context, Elicitation) (ElicitationResult, error) {
			return ElicitationResult{Action: ElicitAccept, Content: answer}, nil
		})
		if res, e := s.serve(context.Background(), "elicitation/create", json.RawMessage(formRequest)); e != nil || string(res) != `{"action":"decline"}` {
			t.Errorf("%s: answered %s %v, want a decline", name, res, e)
		}
	}
	s := elicitingSession(func(context.Context, Elicitation) (ElicitationResult, error) {
		return ElicitationResult{}, errors.New("the approver is gone")
	})
	if res, _ := s.serve(context.Background(), "elicitation/create", json.RawMessage(formRequest)); string(res) != `{"action":"decline"}` {
		t.Errorf("a failing channel answered %s", res)
	}
}

// A request outside the form subset (nested or array fields, unknown
// keywords, URL mode, too many fields, a default of the wrong type) is an
// invalid-params error, and no person is asked.
func TestElicitationOutsideTheFormSubsetIsRefused(t *testing.T) {
	t.Parallel()
	many := `{"message":"m","requestedSchema":{"type":"object","properties":{`
	for i := range MaxElicitationFields + 1 {
		if i > 0 {
			many += ","
		}
		many += `"f` + strings.Repeat("x", i) + `":{"type":"boolean"}`
	}
	many += `}}}`
	for name, req := range map[string]string{
		"Nested":       `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"object"}}}}`,
		"Array":        `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}}`,
		"Keyword":      `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string","pattern":".*"}}}}`,
		"URLMode":      `{"mode":"url","message":"m","url":"https://x.test","elicitationId":"1"}`,
		"TooMany":      many,
		"BadDefault":   `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"integer","default":"x"}}}}`,
		"UnknownField": `{"message":"m","requestedSchema":{"type":"object","properties":{},"required":["a"]}}`,
	} {
		asked := false
		s := elicitingSession(func(context.Context, Elicitation) (ElicitationResult, error) {
			asked = true
			return ElicitationResult{Action: ElicitAccept}, nil
		})
		res, e := s.serve(context.Background(), "elicitation/create", json.RawMessage(req))
		if e == nil || e.Code != codeInvalidParams || asked {
			t.Errorf("%s: answered %s %+v (asked %v), want invalid params", name, res, e, asked)
		}
	}
}

// roots/list answers the session's workspace as file URIs; a client with
// no roots does not serve the method.
func TestRootsAreTheSessionWorkspace(t *testing.T) {
	t.Parallel()
	s := newSession("srv")
	s.roots = []string{"/workspace/project one"}
	res, e := s.serve(context.Background(), "roots/list", nil)
	if e != nil || string(res) != `{"roots":[{"uri":"file:///workspace/project%20one","name":"project one"}]}` {
		t.Fatalf("roots/list: %s %v", res, e)
	}
	if _, e := newSession("srv").serve(context.Background(), "roots/list", nil); e == nil || e.Code != codeMethodNotFound {
		t.Fatalf("roots/list without roots: %+v", e)
	}
}
