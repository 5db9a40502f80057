package children

import (
	"encoding/json"
	"strconv"
	"strings"
)

// ToolID is the capability ID of the subagent tool.
const ToolID = "subagent"

// toolDescription is what the root model reads about the tool.
const toolDescription = "Run focused child agents (depth one) and collect their results. " +
	"spawn starts a child on request.input with at most the capabilities and ceilings you have (narrow them in request.capabilities " +
	"and request.ceilings); it returns the child's agent snapshot at once. wait blocks until any or all of agent_ids settled or " +
	"timeout_ms passed, inspect returns one child's snapshot, stop ends one child. A settled child's snapshot carries its outcome, " +
	"accounting and result_id; hand a completed child's schema-valid result to a later child with request.handoffs " +
	"(inline, or artifact for the file its result names). Children never see your conversation."

// inputSchema returns the subagent tool's input schema (REFERENCE §4.5):
// spawn_remote and remote_request only when remotes is not empty.
func inputSchema(remotes []string) json.RawMessage {
	actions := []string{"spawn", "inspect", "wait", "stop"}
	if len(remotes) > 0 {
		actions = []string{"spawn", "spawn_remote", "inspect", "wait", "stop"}
	}
	strs := func(ss []string) string {
		b, _ := json.Marshal(ss)
		return string(b)
	}
	uuid := `{"type":"string","minLength":36,"maxLength":36,"format":"uuid"}`
	list := `{"type":["array","null"],"items":{"type":"string","minLength":1,"maxLength":256}}`
	count := `{"type":["integer","null"],"minimum":0}`
	decimal := `{"type":["string","null"],"minLength":1,"maxLength":20,"description":"A decimal integer as a string."}`
	var b strings.Builder
	b.WriteString(`{"type":"object","additionalProperties":false,"required":["action"],"properties":{`)
	b.WriteString(`"action":{"type":"string","enum":` + strs(actions) + `},`)
	b.WriteString(`"request":{"type":"object","additionalProperties":false,"required":["input"],"description":"For spawn.","properties":{`)
	b.WriteString(`"input":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(MaxInputBytes) + `,"description":"The child's task."},`)
	b.WriteString(`"overlay":{"type":["string","null"],"description":"Task-specific instructions for the child."},`)
	b.WriteString(`"context":{"type":"array","items":{"type":"string"},"description":"Explicit context strings for the child."},`)
	b.WriteString(`"handoffs":{"type":"array","maxItems":` + strconv.Itoa(MaxHandoffs) + `,"items":{"type":"object","additionalProperties":false,` +
		`"required":["source_agent_id","result_id","kind"],"properties":{"source_agent_id":` + uuid + `,"result_id":` + uuid +
		`,"kind":{"type":"string","enum":["inline","artifact"]}}}},`)
	b.WriteString(`"capabilities":{"type":"object","additionalProperties":false,"description":"Each list may only narrow yours; null inherits.","properties":{` +
		`"tools":` + list + `,"skills":` + list + `,"mcp_servers":` + list + `,"model_route":` + list +
		`,"memory":{"type":["object","null"],"additionalProperties":false,"description":"The memory tools' record kinds and repository paths; each may only narrow yours.","properties":{"kinds":` + list + `,"paths":` + list + `}}}},`)
	b.WriteString(`"ceilings":{"type":"object","additionalProperties":false,"description":"Each may only be at most yours; null inherits.","properties":{` +
		`"max_model_calls":` + count + `,"max_tool_calls":` + count + `,"max_duration_ms":` + count + `,"max_context_bytes":` + count +
		`,"max_output_bytes":` + count + `,"max_total_tokens":` + decimal + `,"max_cost_microusd":` + decimal + `}},`)
	b.WriteString(`"output_schema":{"description":"A JSON Schema the child's final answer must match."}}},`)
	if len(remotes) > 0 {
		b.WriteString(`"remote_request":{"type":"object","additionalProperties":false,"required":["remote","parts","accepted_output_modes"],"description":"For spawn_remote.","properties":{`)
		b.WriteString(`"remote":{"type":"string","enum":` + strs(remotes) + `},`)
		b.WriteString(`"parts":{"type":"array","minItems":1,"maxItems":` + strconv.Itoa(MaxRemoteParts) + `,"items":{"type":"object","additionalProperties":false,` +
			`"minProperties":1,"properties":{"text":{"type":"string"},"data":{},"raw":{"type":"string","description":"Base64 bytes."},` +
			`"url":{"type":"string","maxLength":` + strconv.Itoa(maxURLBytes) + `},"mediaType":{"type":"string","maxLength":` + strconv.Itoa(maxMediaTypeBytes) +
			`},"filename":{"type":"string","maxLength":` + strconv.Itoa(maxFilenameBytes) + `}}}},`)
		b.WriteString(`"accepted_output_modes":{"type":"array","minItems":1,"maxItems":` + strconv.Itoa(MaxOutputModes) + `,"items":{"type":"string","maxLength":` + strconv.Itoa(maxModeBytes) + `}},`)
		b.WriteString(`"stream":{"type":["boolean","null"]},"max_duration_ms":` + count + `}},`)
	}
	b.WriteString(`"agent_id":` + withDescription(uuid, "For inspect and stop.") + `,`)
	b.WriteString(`"agent_ids":{"type":"array","minItems":1,"maxItems":` + strconv.Itoa(MaxWaitHandles) + `,"items":` + uuid + `,"description":"For wait: distinct children."},`)
	b.WriteString(`"mode":{"type":"string","enum":["any","all"],"description":"For wait."},`)
	b.WriteString(`"timeout_ms":{"type":"integer","minimum":0,"maximum":` + strconv.Itoa(int(MaxWaitTimeout.Milliseconds())) + `,"description":"For wait."}`)
	b.WriteString(`}}`)
	return json.RawMessage(b.String())
}

func withDescription(schema, d string) string {
	return schema[:len(schema)-1] + `,"description":` + strconv.Quote(d) + `}`
}
