package children

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/schema"
	"github.com/pabloagent/pablo/ledger/outcome"
)

const uuidA = "00000000-0000-4000-8000-000000000001"

func TestToolSchemaIsInTheBoundedSubsetAndOffersRemoteOnlyWithRemotes(t *testing.T) {
	t.Parallel()
	for _, remotes := range [][]string{nil, {"research", "billing"}} {
		tool := NewTool(nil, remotes)
		specs := tool.Tools()
		if len(specs) != 1 || specs[0].ID != ToolID {
			t.Fatalf("%+v", specs)
		}
		if _, err := schema.Compile(specs[0].InputSchema, schema.DefaultLimits()); err != nil {
			t.Fatalf("remotes %v: %v", remotes, err)
		}
		has := strings.Contains(string(specs[0].InputSchema), "spawn_remote")
		if has != (len(remotes) > 0) || strings.Contains(string(specs[0].InputSchema), "remote_request") != has {
			t.Fatalf("remotes %v: spawn_remote offered = %v", remotes, has)
		}
	}
	if !strings.Contains(string(NewTool(nil, []string{"research"}).Tools()[0].InputSchema), `"enum":["research"]`) {
		t.Fatal("remote is an enum of the configured names")
	}
}

// TestValidArgumentsPassTheSchemaAndTheParser holds the schema and the
// parser to the same arguments at their bounds.
func TestValidArgumentsPassTheSchemaAndTheParser(t *testing.T) {
	t.Parallel()
	remotes := []string{"research"}
	sc, err := schema.Compile(NewTool(nil, remotes).Tools()[0].InputSchema, schema.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var sixteen []string
	for i := range 16 {
		sixteen = append(sixteen, fmt.Sprintf(`"00000000-0000-4000-8000-0000000000%02d"`, i))
	}
	var handoffs []string
	for range 16 {
		handoffs = append(handoffs, `{"source_agent_id":"`+uuidA+`","result_id":"`+uuidA+`","kind":"inline"}`)
	}
	for _, args := range []string{
		`{"action":"spawn","request":{"input":"x"}}`,
		`{"action":"spawn","request":{"input":"` + strings.Repeat("a", MaxInputBytes) + `"}}`,
		`{"action":"spawn","request":{"input":"x","overlay":null,"context":["a","b"],"handoffs":[` + strings.Join(handoffs, ",") + `],` +
			`"capabilities":{"tools":["fs.read"],"skills":null,"mcp_servers":[],"model_route":["a"]},` +
			`"ceilings":{"max_model_calls":0,"max_tool_calls":18446744073709551615,"max_duration_ms":null,"max_context_bytes":1,"max_output_bytes":2,` +
			`"max_total_tokens":"18446744073709551615","max_cost_microusd":null},"output_schema":{"type":"object"}}}`,
		`{"action":"spawn_remote","remote_request":{"remote":"research","parts":[{"text":"hi"},{"data":{"k":1}},{"raw":"aGk="},{"url":"` + strings.Repeat("u", 4096) + `","mediaType":"` + strings.Repeat("m", 128) + `","filename":"` + strings.Repeat("f", 256) + `"}],"accepted_output_modes":["text/plain"],"stream":null,"max_duration_ms":1000}}`,
		`{"action":"inspect","agent_id":"` + uuidA + `"}`,
		`{"action":"stop","agent_id":"` + uuidA + `"}`,
		`{"action":"wait","agent_ids":[` + strings.Join(sixteen, ",") + `],"mode":"all","timeout_ms":900000}`,
		`{"action":"wait","agent_ids":["` + uuidA + `"],"mode":"any","timeout_ms":0}`,
	} {
		// The schema validator bounds an instance at 1,048,576 bytes, so the
		// largest input is the parser's alone to check.
		if res := sc.Validate([]byte(args)); !res.Valid && len(args) <= 1<<20 {
			t.Errorf("the schema refuses %.120s: %+v", args, res.Diagnostics)
		}
		if _, err := ParseArguments([]byte(args), remotes); err != nil {
			t.Errorf("the parser refuses %.120s: %v", args, err)
		}
	}
}

func TestParserRefusesEveryBadArgumentWithItsCode(t *testing.T) {
	t.Parallel()
	var seventeen []string
	for i := range 17 {
		seventeen = append(seventeen, fmt.Sprintf(`"00000000-0000-4000-8000-0000000000%02d"`, i))
	}
	var handoffs []string
	for range 17 {
		handoffs = append(handoffs, `{"source_agent_id":"`+uuidA+`","result_id":"`+uuidA+`","kind":"inline"}`)
	}
	remote := func(body string) string { return `{"action":"spawn_remote","remote_request":{` + body + `}}` }
	parts := func(p string) string {
		return remote(`"remote":"research","parts":[` + p + `],"accepted_output_modes":["text/plain"]`)
	}
	var thirtyThree []string
	for range 33 {
		thirtyThree = append(thirtyThree, `{"text":"x"}`)
	}
	var seventeenModes []string
	for range 17 {
		seventeenModes = append(seventeenModes, `"text/plain"`)
	}
	for _, c := range []struct {
		name, args string
		code       Code
		remotes    []string
	}{
		{"not JSON", `{"action":`, CodeInvalidJSON, nil},
		{"not an object", `["spawn"]`, CodeWrongType, nil},
		{"text after the object", `{"action":"stop","agent_id":"` + uuidA + `"} {}`, CodeInvalidJSON, nil},
		{"a duplicate key", `{"action":"stop","action":"spawn","agent_id":"` + uuidA + `"}`, CodeInvalidJSON, nil},
		{"no action", `{}`, CodeMissingField, nil},
		{"an unknown action", `{"action":"fork"}`, CodeUnknownAction, nil},
		{"spawn_remote without remotes", `{"action":"spawn_remote","remote_request":{}}`, CodeUnknownAction, nil},
		{"an action of the wrong type", `{"action":1}`, CodeWrongType, nil},
		{"an unknown field", `{"action":"stop","agent_id":"` + uuidA + `","force":true}`, CodeUnknownField, nil},
		{"a field of another action", `{"action":"stop","agent_id":"` + uuidA + `","mode":"any"}`, CodeUnknownField, nil},
		{"remote_request without remotes", `{"action":"spawn","request":{"input":"x"},"remote_request":{}}`, CodeUnknownField, nil},
		{"spawn without request", `{"action":"spawn"}`, CodeMissingField, nil},
		{"an empty input", `{"action":"spawn","request":{"input":""}}`, CodeOutOfRange, nil},
		{"an input one past 1 MiB", `{"action":"spawn","request":{"input":"` + strings.Repeat("a", MaxInputBytes+1) + `"}}`, CodeOutOfRange, nil},
		{"an input that is a number", `{"action":"spawn","request":{"input":7}}`, CodeWrongType, nil},
		{"an unknown request field", `{"action":"spawn","request":{"input":"x","tools":[]}}`, CodeUnknownField, nil},
		{"an overlay that is a list", `{"action":"spawn","request":{"input":"x","overlay":[]}}`, CodeWrongType, nil},
		{"context of numbers", `{"action":"spawn","request":{"input":"x","context":[1]}}`, CodeWrongType, nil},
		{"17 handoffs", `{"action":"spawn","request":{"input":"x","handoffs":[` + strings.Join(handoffs, ",") + `]}}`, CodeOutOfRange, nil},
		{"a handoff kind", `{"action":"spawn","request":{"input":"x","handoffs":[{"source_agent_id":"` + uuidA + `","result_id":"` + uuidA + `","kind":"copy"}]}}`, CodeOutOfRange, nil},
		{"a handoff without result", `{"action":"spawn","request":{"input":"x","handoffs":[{"source_agent_id":"` + uuidA + `","kind":"inline"}]}}`, CodeMissingField, nil},
		{"a handoff ID that is no UUID", `{"action":"spawn","request":{"input":"x","handoffs":[{"source_agent_id":"a","result_id":"` + uuidA + `","kind":"inline"}]}}`, CodeOutOfRange, nil},
		{"an unknown capability", `{"action":"spawn","request":{"input":"x","capabilities":{"credentials":[]}}}`, CodeUnknownField, nil},
		{"tools that are a string", `{"action":"spawn","request":{"input":"x","capabilities":{"tools":"fs.read"}}}`, CodeWrongType, nil},
		{"an empty tool name", `{"action":"spawn","request":{"input":"x","capabilities":{"tools":[""]}}}`, CodeOutOfRange, nil},
		{"an unknown ceiling", `{"action":"spawn","request":{"input":"x","ceilings":{"max_events":1}}}`, CodeUnknownField, nil},
		{"a negative ceiling", `{"action":"spawn","request":{"input":"x","ceilings":{"max_model_calls":-1}}}`, CodeOutOfRange, nil},
		{"a fractional ceiling", `{"action":"spawn","request":{"input":"x","ceilings":{"max_model_calls":1.5}}}`, CodeWrongType, nil},
		{"an exponent ceiling", `{"action":"spawn","request":{"input":"x","ceilings":{"max_model_calls":1e3}}}`, CodeWrongType, nil},
		{"a ceiling past uint64", `{"action":"spawn","request":{"input":"x","ceilings":{"max_tool_calls":18446744073709551616}}}`, CodeOutOfRange, nil},
		{"a ceiling as a string", `{"action":"spawn","request":{"input":"x","ceilings":{"max_model_calls":"3"}}}`, CodeWrongType, nil},
		{"tokens as a number", `{"action":"spawn","request":{"input":"x","ceilings":{"max_total_tokens":3}}}`, CodeWrongType, nil},
		{"tokens not canonical", `{"action":"spawn","request":{"input":"x","ceilings":{"max_total_tokens":"03"}}}`, CodeOutOfRange, nil},
		{"cost past uint64", `{"action":"spawn","request":{"input":"x","ceilings":{"max_cost_microusd":"18446744073709551616"}}}`, CodeOutOfRange, nil},
		{"inspect without agent_id", `{"action":"inspect"}`, CodeMissingField, nil},
		{"an agent_id that is no UUID", `{"action":"inspect","agent_id":"child-1"}`, CodeOutOfRange, nil},
		{"an upper-case agent_id", `{"action":"inspect","agent_id":"0000000A-0000-4000-8000-000000000001"}`, CodeOutOfRange, nil},
		{"wait of none", `{"action":"wait","agent_ids":[],"mode":"any","timeout_ms":0}`, CodeOutOfRange, nil},
		{"wait of 17", `{"action":"wait","agent_ids":[` + strings.Join(seventeen, ",") + `],"mode":"any","timeout_ms":0}`, CodeOutOfRange, nil},
		{"wait of a duplicate", `{"action":"wait","agent_ids":["` + uuidA + `","` + uuidA + `"],"mode":"any","timeout_ms":0}`, CodeDuplicateAgentID, nil},
		{"wait with another mode", `{"action":"wait","agent_ids":["` + uuidA + `"],"mode":"first","timeout_ms":0}`, CodeOutOfRange, nil},
		{"wait one past 900,000 ms", `{"action":"wait","agent_ids":["` + uuidA + `"],"mode":"any","timeout_ms":900001}`, CodeOutOfRange, nil},
		{"wait with a negative timeout", `{"action":"wait","agent_ids":["` + uuidA + `"],"mode":"any","timeout_ms":-1}`, CodeOutOfRange, nil},
		{"wait without timeout", `{"action":"wait","agent_ids":["` + uuidA + `"],"mode":"any"}`, CodeMissingField, nil},
		{"an unconfigured remote", remote(`"remote":"elsewhere","parts":[{"text":"x"}],"accepted_output_modes":["text/plain"]`), CodeOutOfRange, []string{"research"}},
		{"no parts", parts(``), CodeOutOfRange, []string{"research"}},
		{"33 parts", parts(strings.Join(thirtyThree, ",")), CodeOutOfRange, []string{"research"}},
		{"a part of two kinds", parts(`{"text":"x","url":"https://a"}`), CodeOutOfRange, []string{"research"}},
		{"a part of none", parts(`{"mediaType":"text/plain"}`), CodeOutOfRange, []string{"research"}},
		{"a url one past 4096", parts(`{"url":"` + strings.Repeat("u", 4097) + `"}`), CodeOutOfRange, []string{"research"}},
		{"a mediaType one past 128", parts(`{"text":"x","mediaType":"` + strings.Repeat("m", 129) + `"}`), CodeOutOfRange, []string{"research"}},
		{"a filename one past 256", parts(`{"text":"x","filename":"` + strings.Repeat("f", 257) + `"}`), CodeOutOfRange, []string{"research"}},
		{"raw that is no base64", parts(`{"raw":"***"}`), CodeWrongType, []string{"research"}},
		{"an unknown part field", parts(`{"text":"x","kind":"text"}`), CodeUnknownField, []string{"research"}},
		{"no output modes", remote(`"remote":"research","parts":[{"text":"x"}],"accepted_output_modes":[]`), CodeOutOfRange, []string{"research"}},
		{"17 output modes", remote(`"remote":"research","parts":[{"text":"x"}],"accepted_output_modes":[` + strings.Join(seventeenModes, ",") + `]`), CodeOutOfRange, []string{"research"}},
		{"a mode one past 128", remote(`"remote":"research","parts":[{"text":"x"}],"accepted_output_modes":["` + strings.Repeat("m", 129) + `"]`), CodeOutOfRange, []string{"research"}},
		{"stream as a string", remote(`"remote":"research","parts":[{"text":"x"}],"accepted_output_modes":["text/plain"],"stream":"yes"`), CodeWrongType, []string{"research"}},
	} {
		_, err := ParseArguments([]byte(c.args), c.remotes)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: want %s, got %v", c.name, c.code, err)
			continue
		}
		if !errors.Is(err, ErrArguments) {
			t.Errorf("%s: an argument error matches ErrArguments", c.name)
		}
	}
}

func TestToolCallsTheSupervisorAndReturnsTheReferencePayloads(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	tool := NewTool(tr, tr.Remotes())
	call := func(args string) (outcome.ToolStatus, map[string]any) {
		t.Helper()
		res := tool.Call(context.Background(), authority.Call{ID: "c", Tool: ToolID, Arguments: json.RawMessage(args)})
		b, err := json.Marshal(res.Output)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		return res.Status, m
	}
	st, out := call(`{"action":"spawn","request":{"input":"read the notes","output_schema":{"type":"object"}}}`)
	if st != outcome.ToolCompleted || out["action"] != "spawn" {
		t.Fatalf("%s %v", st, out)
	}
	agent := out["agent"].(map[string]any)
	id := agent["agent_id"].(string)
	if agent["state"] != "starting" || agent["depth"] != float64(1) || agent["parent_agent_id"] != "root-agent" || agent["kind"] != "local_acp_temporary" {
		t.Fatalf("%v", agent)
	}
	r.await(t, id).settle(validStructured(`{"ok":true}`))
	st, out = call(`{"action":"wait","agent_ids":["` + id + `"],"mode":"all","timeout_ms":900000}`)
	if st != outcome.ToolCompleted || out["action"] != "wait" || len(out["settled"].([]any)) != 1 || len(out["remaining"].([]any)) != 0 {
		t.Fatalf("%v", out)
	}
	snap := out["settled"].([]any)[0].(map[string]any)
	if snap["state"] != "settled" || snap["result_id"] == nil || snap["outcome"].(map[string]any)["status"] != "completed" {
		t.Fatalf("%v", snap)
	}
	st, out = call(`{"action":"inspect","agent_id":"` + id + `"}`)
	if st != outcome.ToolCompleted || out["action"] != "inspect" || out["snapshot"].(map[string]any)["agent_id"] != id {
		t.Fatalf("%v", out)
	}
	st, out = call(`{"action":"stop","agent_id":"` + id + `"}`)
	if st != outcome.ToolCompleted || out["action"] != "stop" {
		t.Fatalf("%v", out)
	}
	// Refusals are recoverable {action: error, code}.
	for args, code := range map[string]Code{
		`{"action":"fork"}`: CodeUnknownAction,
		`{"action":"inspect","agent_id":"00000000-0000-4000-8000-0000000000ff"}`:                        CodeUnknownAgent,
		`{"action":"spawn","request":{"input":"x","capabilities":{"tools":["shell.run"]}}}`:             CodeNotInherited,
		`{"action":"spawn","request":{"input":"x","capabilities":{"model_route":["cheap","primary"]}}}`: CodeModelRouteOrder,
		`{"action":"spawn","request":{"input":"x","output_schema":{"pattern":"a+"}}}`:                   CodeInvalidOutputSchema,
	} {
		st, out := call(args)
		if st != outcome.ToolRecoverableError || out["action"] != "error" || out["code"] != string(code) || out["message"] == "" {
			t.Errorf("%s: %s %v", args, st, out)
		}
	}
	// A wait whose call is cancelled is a cancelled call, not an error.
	other := spawn(t, tr, "long")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := tool.Call(ctx, authority.Call{Tool: ToolID, Arguments: json.RawMessage(`{"action":"wait","agent_ids":["` + other.AgentID + `"],"mode":"all","timeout_ms":1000}`)})
	if res.Status != outcome.ToolCancelled {
		t.Fatalf("%s", res.Status)
	}
}

func TestToolSatisfiesTheContractsOfTheAuthority(t *testing.T) {
	t.Parallel()
	if _, err := authority.NewContracts(nil, NewTool(nil, []string{"research"}).Tools()); err != nil {
		t.Fatal(err)
	}
}
