package providers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const testSecret = "sk-test-SECRET-0123456789"

// peer is an httptest server that records each request and answers with
// a scripted status and body.
type peer struct {
	srv    *httptest.Server
	hits   atomic.Int32
	mu     sync.Mutex
	bodies [][]byte
	header http.Header
}

func newPeer(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, n int)) *peer {
	t.Helper()
	p := &peer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(p.hits.Add(1))
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.bodies = append(p.bodies, b)
		p.header = r.Header.Clone()
		p.mu.Unlock()
		answer(w, r, n)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *peer) lastBody(t testing.TB) map[string]any {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(p.bodies[len(p.bodies)-1], &m); err != nil {
		t.Fatalf("request body is not JSON: %v", err)
	}
	return m
}

func stream(status int, body string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func status(code int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		// An error body that echoes the credential: it must never be read.
		io.WriteString(w, `{"error":{"message":"bad key `+testSecret+`"}}`)
	}
}

type call struct{ id, name, args string }

// wire renders scripted turns in one provider's wire format.
type wire interface {
	text(deltas []string, usage bool) string
	tools(text string, calls []call, usage bool) string
	hostileFrames() map[string]string // name → one bad frame, placed mid-stream
	contentFilter() string            // a refusal or filtered response
}

// chatWire is OpenAI Chat Completions chunks, as the OpenAI, Vercel and
// OpenRouter references document them.
type chatWire struct{ cost bool }

func chunk(v string) string { return "data: " + v + "\n\n" }

func (w chatWire) usage() string {
	u := `{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":3}`
	if w.cost {
		u += `,"cost":0.0000123401`
	}
	return chunk(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":` + u + `}}`)
}

func (w chatWire) text(deltas []string, usage bool) string {
	var b strings.Builder
	b.WriteString(chunk(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`))
	for _, d := range deltas {
		q, _ := json.Marshal(d)
		b.WriteString(chunk(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(q) + `},"finish_reason":null}]}`))
	}
	b.WriteString(chunk(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`))
	if usage {
		b.WriteString(w.usage())
	}
	b.WriteString(chunk("[DONE]"))
	return b.String()
}

func (w chatWire) tools(text string, calls []call, usage bool) string {
	var b strings.Builder
	b.WriteString(chunk(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`))
	if text != "" {
		q, _ := json.Marshal(text)
		b.WriteString(chunk(`{"choices":[{"index":0,"delta":{"content":` + string(q) + `},"finish_reason":null}]}`))
	}
	for i, c := range calls {
		b.WriteString(chunk(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]},"finish_reason":null}]}`, i, c.id, c.name)))
		half := len(c.args) / 2
		for _, part := range []string{c.args[:half], c.args[half:]} {
			q, _ := json.Marshal(part)
			b.WriteString(chunk(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"finish_reason":null}]}`, i, q)))
		}
	}
	b.WriteString(chunk(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`))
	if usage {
		b.WriteString(w.usage())
	}
	b.WriteString(chunk("[DONE]"))
	return b.String()
}

func (chatWire) hostileFrames() map[string]string {
	return map[string]string{
		"invalid_json":       chunk(`{"choices":[{"index":0,"delta":{"content":"x"`),
		"deep_nesting":       chunk(strings.Repeat("[", 200) + strings.Repeat("]", 200)),
		"wide_container":     chunk("[" + strings.Repeat("0,", 5000) + "0]"),
		"second_choice":      chunk(`{"choices":[{"index":1,"delta":{"content":"x"},"finish_reason":null}]}`),
		"in_stream_error":    chunk(`{"error":{"message":"upstream said ` + testSecret + `","code":502}}`),
		"invalid_utf8":       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"},\"finish_reason\":null}]}\n\n",
		"tool_without_name":  chunk(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"arguments":"{}"}}]},"finish_reason":null}]}`),
		"tool_index_too_big": chunk(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":999,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`),
		"negative_tokens":    chunk(`{"choices":[],"usage":{"prompt_tokens":-1}}`),
		"audio":              chunk(`{"choices":[{"index":0,"delta":{"audio":{"id":"a","data":"AAAA"}},"finish_reason":null}]}`),
	}
}

func (chatWire) contentFilter() string {
	return chunk(`{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."},"finish_reason":null}]}`) +
		chunk(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`) + chunk("[DONE]")
}

// respWire is the Open Responses event stream, as the OpenAI Responses
// streaming reference documents it: SSE event names equal to the JSON type
// and strictly increasing sequence numbers.
type respWire struct{}

type respBuilder struct {
	b   strings.Builder
	seq int
}

func (r *respBuilder) ev(typ, fields string) {
	if fields != "" {
		fields = "," + fields
	}
	fmt.Fprintf(&r.b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, r.seq, fields)
	r.seq++
}

const respUsage = `"usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":3},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":18}`

func (r *respBuilder) start() {
	r.ev("response.created", `"response":{"id":"resp_1","object":"response","status":"in_progress","model":"m","output":[]}`)
	r.ev("response.in_progress", `"response":{"id":"resp_1","object":"response","status":"in_progress","model":"m","output":[]}`)
}

func (r *respBuilder) message(idx int, deltas []string) {
	r.ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"msg_%d","type":"message","status":"in_progress","role":"assistant","content":[]}`, idx, idx))
	r.ev("response.content_part.added", fmt.Sprintf(`"item_id":"msg_%d","output_index":%d,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`, idx, idx))
	for _, d := range deltas {
		q, _ := json.Marshal(d)
		r.ev("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_%d","output_index":%d,"content_index":0,"delta":%s,"logprobs":[]`, idx, idx, q))
	}
	all, _ := json.Marshal(strings.Join(deltas, ""))
	r.ev("response.output_text.done", fmt.Sprintf(`"item_id":"msg_%d","output_index":%d,"content_index":0,"text":%s,"logprobs":[]`, idx, idx, all))
	r.ev("response.content_part.done", fmt.Sprintf(`"item_id":"msg_%d","output_index":%d,"content_index":0,"part":{"type":"output_text","text":%s,"annotations":[]}`, idx, idx, all))
	r.ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}`, idx, idx, all))
}

func (r *respBuilder) fn(idx int, c call) {
	r.ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"in_progress","call_id":%q,"name":%q,"arguments":""}`, idx, idx, c.id, c.name))
	half := len(c.args) / 2
	for _, part := range []string{c.args[:half], c.args[half:]} {
		q, _ := json.Marshal(part)
		r.ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"delta":%s`, idx, idx, q))
	}
	q, _ := json.Marshal(c.args)
	r.ev("response.function_call_arguments.done", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"arguments":%s`, idx, idx, q))
	r.ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"completed","call_id":%q,"name":%q,"arguments":%s}`, idx, idx, c.id, c.name, q))
}

func (r *respBuilder) done(usage bool) string {
	u := `"usage":null`
	if usage {
		u = respUsage
	}
	r.ev("response.completed", `"response":{"id":"resp_1","object":"response","status":"completed","model":"m",`+u+`}`)
	return r.b.String()
}

func (respWire) text(deltas []string, usage bool) string {
	r := &respBuilder{}
	r.start()
	r.ev("response.output_item.added", `"output_index":0,"item":{"id":"rs_0","type":"reasoning","summary":[],"encrypted_content":"opaque"}`)
	r.ev("response.output_item.done", `"output_index":0,"item":{"id":"rs_0","type":"reasoning","summary":[]}`)
	r.message(1, deltas)
	return r.done(usage)
}

func (respWire) tools(text string, calls []call, usage bool) string {
	r := &respBuilder{}
	r.start()
	i := 0
	if text != "" {
		r.message(0, []string{text})
		i++
	}
	for _, c := range calls {
		r.fn(i, c)
		i++
	}
	return r.done(usage)
}

func (respWire) hostileFrames() map[string]string {
	return map[string]string{
		"invalid_json":       "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\n\n",
		"deep_nesting":       "event: x\ndata: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n\n",
		"event_name_differs": "event: response.in_progress\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":99}\n\n",
		"sequence_repeats":   "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":0}\n\n",
		"unknown_event":      "event: response.audio.delta\ndata: {\"type\":\"response.audio.delta\",\"sequence_number\":99}\n\n",
		"hosted_tool":        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":99,\"output_index\":7,\"item\":{\"id\":\"ws\",\"type\":\"web_search_call\"}}\n\n",
		"error_event":        "event: error\ndata: {\"type\":\"error\",\"sequence_number\":99,\"code\":\"server_error\",\"message\":\"" + testSecret + "\"}\n\n",
		"long_call_id":       "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":99,\"output_index\":7,\"item\":{\"id\":\"f\",\"type\":\"function_call\",\"call_id\":\"" + strings.Repeat("c", 65) + "\",\"name\":\"f\"}}\n\n",
	}
}

func (respWire) contentFilter() string {
	r := &respBuilder{}
	r.start()
	r.ev("response.output_item.added", `"output_index":0,"item":{"id":"msg_0","type":"message","status":"in_progress","role":"assistant","content":[]}`)
	r.ev("response.content_part.added", `"item_id":"msg_0","output_index":0,"content_index":0,"part":{"type":"refusal","refusal":""}`)
	return r.b.String()
}
