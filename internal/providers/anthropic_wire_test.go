package providers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// anthWire is the Anthropic Messages event stream, as the Messages
// streaming reference documents it: event names equal to the JSON type,
// message_start, content blocks by index, message_delta, message_stop.
type anthWire struct{}

type anthBuilder struct{ b strings.Builder }

func (a *anthBuilder) ev(typ, fields string) {
	if fields != "" {
		fields = "," + fields
	}
	fmt.Fprintf(&a.b, "event: %s\ndata: {\"type\":%q%s}\n\n", typ, typ, fields)
}

func (a *anthBuilder) start(usage bool) {
	u := ""
	if usage {
		u = `,"usage":{"input_tokens":11,"cache_read_input_tokens":3,"cache_creation_input_tokens":0,"output_tokens":1}`
	}
	a.ev("message_start", `"message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null`+u+`}`)
	a.ev("ping", "")
}

func (a *anthBuilder) text(idx int, deltas []string) {
	a.ev("content_block_start", fmt.Sprintf(`"index":%d,"content_block":{"type":"text","text":""}`, idx))
	for _, d := range deltas {
		q, _ := json.Marshal(d)
		a.ev("content_block_delta", fmt.Sprintf(`"index":%d,"delta":{"type":"text_delta","text":%s}`, idx, q))
	}
	a.ev("content_block_stop", fmt.Sprintf(`"index":%d`, idx))
}

func (a *anthBuilder) tool(idx int, c call) {
	a.ev("content_block_start", fmt.Sprintf(`"index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}`, idx, c.id, c.name))
	half := len(c.args) / 2
	for _, part := range []string{c.args[:half], c.args[half:]} {
		q, _ := json.Marshal(part)
		a.ev("content_block_delta", fmt.Sprintf(`"index":%d,"delta":{"type":"input_json_delta","partial_json":%s}`, idx, q))
	}
	a.ev("content_block_stop", fmt.Sprintf(`"index":%d`, idx))
}

func (a *anthBuilder) done(stop string, usage bool) string {
	u := ""
	if usage {
		u = `,"usage":{"output_tokens":7}`
	}
	a.ev("message_delta", `"delta":{"stop_reason":"`+stop+`","stop_sequence":null}`+u)
	a.ev("message_stop", "")
	return a.b.String()
}

func (anthWire) text(deltas []string, usage bool) string {
	a := &anthBuilder{}
	a.start(usage)
	a.ev("content_block_start", `"index":0,"content_block":{"type":"thinking","thinking":"","signature":""}`)
	a.ev("content_block_delta", `"index":0,"delta":{"type":"thinking_delta","thinking":"Check the ledger."}`)
	a.ev("content_block_delta", `"index":0,"delta":{"type":"signature_delta","signature":"c2lnbmVk"}`)
	a.ev("content_block_stop", `"index":0`)
	a.text(1, deltas)
	return a.done("end_turn", usage)
}

func (anthWire) tools(text string, calls []call, usage bool) string {
	a := &anthBuilder{}
	a.start(usage)
	i := 0
	if text != "" {
		a.text(0, []string{text})
		i++
	}
	for _, c := range calls {
		a.tool(i, c)
		i++
	}
	return a.done("tool_use", usage)
}

func (anthWire) hostileFrames() map[string]string {
	return map[string]string{
		"invalid_json":       "event: ping\ndata: {\"type\":\"ping\",\n\n",
		"deep_nesting":       "event: x\ndata: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n\n",
		"event_name_differs": "event: ping\ndata: {\"type\":\"message_stop\"}\n\n",
		"unknown_event":      "event: message_audio\ndata: {\"type\":\"message_audio\"}\n\n",
		"hosted_tool":        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":7,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\"}}\n\n",
		"error_event":        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"" + testSecret + "\"}}\n\n",
		"long_call_id":       "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":7,\"content_block\":{\"type\":\"tool_use\",\"id\":\"" + strings.Repeat("c", 65) + "\",\"name\":\"f\",\"input\":{}}}\n\n",
	}
}

func (anthWire) contentFilter() string {
	a := &anthBuilder{}
	a.start(true)
	a.ev("content_block_start", `"index":0,"content_block":{"type":"image","source":{}}`)
	return a.b.String()
}
