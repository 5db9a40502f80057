package pablo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// callIDServer is a loopback OpenAI-compatible server that streams, turn
// by turn, fs_read calls under the tool-call IDs it is scripted with (raw
// JSON string contents, so an ID can hold bytes that are not UTF-8), then
// the final answer. It keeps every request body.
type callIDServer struct {
	srv   *httptest.Server
	turns [][]string
	mu    sync.Mutex
	reqs  [][]byte
}

// newCallIDServer serves Chat Completions, or with responses the Open
// Responses event stream.
func newCallIDServer(t *testing.T, turns [][]string, responses bool) *callIDServer {
	f := &callIDServer{turns: turns}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, b)
		n := len(f.reqs) - 1
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		if responses {
			f.responses(w, fl, n)
			return
		}
		send := func(s string) { io.WriteString(w, "data: "+s+"\n\n"); fl.Flush() }
		send(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
		if n < len(f.turns) {
			for i, id := range f.turns[n] {
				// As servers stream a call: the ID and name first (no "id"
				// key at all stands for a server that sends none), then the
				// arguments in two pieces.
				idField := `"id":"` + id + `",`
				if id == "<none>" {
					idField = ""
				}
				send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,%s"type":"function","function":{"name":"fs_read","arguments":""}}]},"finish_reason":null}]}`, i, idField))
				send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":"{\"path\":"}}]},"finish_reason":null}]}`, i))
				send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":"\"evidence.md\"}"}}]},"finish_reason":null}]}`, i))
			}
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		} else {
			send(`{"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		}
		send(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
		send("[DONE]")
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// responses streams turn n as the Open Responses API does: each call an
// output item whose arguments arrive in two deltas.
func (f *callIDServer) responses(w io.Writer, fl http.Flusher, n int) {
	seq := 0
	ev := func(typ, fields string) {
		fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, fields)
		fl.Flush()
		seq++
	}
	ev("response.created", `"response":{"id":"resp_1","object":"response","status":"in_progress","model":"m","output":[]}`)
	if n < len(f.turns) {
		for i, id := range f.turns[n] {
			ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"in_progress","call_id":"%s","name":"fs_read","arguments":""}`, i, i, id))
			ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"delta":"{\"path\":"`, i, i))
			ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"delta":"\"evidence.md\"}"`, i, i))
			ev("response.function_call_arguments.done", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"arguments":"{\"path\":\"evidence.md\"}"`, i, i))
			ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"completed","call_id":"%s","name":"fs_read","arguments":"{\"path\":\"evidence.md\"}"}`, i, i, id))
		}
	} else {
		ev("response.output_item.added", `"output_index":0,"item":{"id":"msg_0","type":"message","status":"in_progress","role":"assistant","content":[]}`)
		ev("response.content_part.added", `"item_id":"msg_0","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`)
		ev("response.output_text.delta", `"item_id":"msg_0","output_index":0,"content_index":0,"delta":"done","logprobs":[]`)
		ev("response.output_text.done", `"item_id":"msg_0","output_index":0,"content_index":0,"text":"done","logprobs":[]`)
		ev("response.content_part.done", `"item_id":"msg_0","output_index":0,"content_index":0,"part":{"type":"output_text","text":"done","annotations":[]}`)
		ev("response.output_item.done", `"output_index":0,"item":{"id":"msg_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}`)
	}
	ev("response.completed", `"response":{"id":"resp_1","object":"response","status":"completed","model":"m","usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}`)
}

// wireCalls are the call IDs of a request's conversation in order, and
// the IDs its tool results answer, in order: Chat Completions messages or
// Open Responses input items.
func wireCalls(t *testing.T, body []byte) (calls, answered []string) {
	t.Helper()
	var req struct {
		Messages []wireMessage `json:"messages"`
		Input    []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		if m.Role == "tool" {
			answered = append(answered, m.ToolCallID)
		}
	}
	for _, it := range req.Input {
		switch it.Type {
		case "function_call":
			calls = append(calls, it.CallID)
		case "function_call_output":
			answered = append(answered, it.CallID)
		}
	}
	return calls, answered
}

// wireMessage is a message of a request as the server received it.
type wireMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

// TestProviderCallIDsNeverKeyTheLedger: whatever tool-call IDs an
// OpenAI-compatible server streams (none, empty, the same every turn, the
// same for two parallel calls, 10 KB long, not UTF-8; through the Open
// Responses adapter, the same every turn or for two calls), the task completes;
// the ledger, the events and the idempotency keys name each call once
// under Pablo's own ID (call_T_I); and the history the provider is sent
// back pairs every tool result with the ID it sent for that call, or, where
// that one was missing, unusable or already used in the conversation, with
// a made-up one unique in the conversation.
func TestProviderCallIDsNeverKeyTheLedger(t *testing.T) {
	long := strings.Repeat("x", 10<<10)
	// keep, per call in order: the wire ID the provider must get back, or
	// "" for one made up.
	for _, tc := range []struct {
		name  string
		turns [][]string
		keep  []string
		// responses: through the Open Responses adapter, which refuses
		// an empty or over-long call_id as a malformed stream.
		responses bool
	}{
		{"Missing", [][]string{{"<none>"}, {"<none>"}}, []string{"", ""}, false},
		{"Empty", [][]string{{""}, {""}, {""}}, []string{"", "", ""}, false},
		{"RepeatedAcrossTurns", [][]string{{"call_0"}, {"call_0"}, {"call_0"}}, []string{"call_0", "", ""}, false},
		{"RepeatedWithinAResponse", [][]string{{"dup", "dup"}, {"dup", "other"}}, []string{"dup", "", "", "other"}, false},
		{"MadeUpIDTakenByTheProvider", [][]string{{"a"}, {"call_2_2", "call_2_2"}}, []string{"a", "call_2_2", "call_2_2_2"}, false},
		{"OverLong", [][]string{{long}, {long}}, []string{"", ""}, false},
		// Bytes that are not UTF-8, raw in the frame: the adapter takes
		// the ID for a missing one.
		{"NotUTF8Bytes", [][]string{{"call_\xff\xfe"}, {"call_\xff\xfe"}}, []string{"", ""}, false},
		// A lone surrogate is how a JSON encoder writes bytes that are not
		// UTF-8 (Python's json.dumps does); the decoder makes it U+FFFD.
		{"NotUTF8", [][]string{{`call_\udcff\udcfe`}, {`call_\udcff`}, {"ok"}}, []string{"", "", "ok"}, false},
		{"ResponsesRepeatedAcrossTurns", [][]string{{"call_0"}, {"call_0"}}, []string{"call_0", ""}, true},
		{"ResponsesRepeatedWithinAResponse", [][]string{{"dup", "dup"}}, []string{"dup", ""}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCallIDServer(t, tc.turns, tc.responses)
			model := openAICompatible(f.srv.URL + "/v1/chat/completions")
			if tc.responses {
				model = "[options.model]\nprovider = \"open_responses\"\nid = \"m\"\ncapability_profile = \"open-responses-text-tools-v1\"\ncredential = \"responses\"\nendpoint = \"" + f.srv.URL + "/v1/responses\"\n" +
					"[credentials.responses]\nconsumer = \"provider.open_responses\"\nsources = [{ kind = \"environment\", name = \"LOCAL_KEY\" }]\n"
			}
			body := "[options.limits]\nmax_model_calls = 8\nmax_tool_calls = 8\n" + model
			d := providerDeployment(t, body, nil)
			store := ledger.NewMemoryStore()
			obj, events := runProviderTask(t, d, HostOptions{LookupEnv: lookupKey, Store: store})
			if obj.Outcome.Status != event.StatusCompleted {
				b, _ := json.Marshal(obj.Outcome)
				t.Fatalf("outcome %s", b)
			}
			var want []string
			for turn, calls := range tc.turns {
				for i := range calls {
					want = append(want, fmt.Sprintf("call_%d_%d", turn+1, i+1))
				}
			}
			var started, finished []string
			for _, ev := range events {
				switch {
				case ev.Type == event.ToolStarted:
					started = append(started, ev.Call.ID)
				case ev.Type == event.ToolFinished:
					finished = append(finished, ev.CallID)
				}
			}
			if fmt.Sprint(started) != fmt.Sprint(want) || fmt.Sprint(finished) != fmt.Sprint(want) {
				t.Fatalf("tool.started %q, tool.finished %q, want each of %q once", started, finished, want)
			}
			// The ledger holds each call once, under Pablo's ID, with the
			// key derived from it.
			rep, err := ledger.RecoverTask(context.Background(), store, *obj.RunID)
			if err != nil {
				t.Fatal(err)
			}
			var recorded []string
			for _, c := range rep.Completed {
				if c.Kind != ledger.ToolCallKind {
					continue
				}
				recorded = append(recorded, c.CallID)
				if c.IdempotencyKey != IdempotencyKey(*obj.RunID, c.AgentID, c.CallID) {
					t.Errorf("call %s carries the key %s", c.CallID, c.IdempotencyKey)
				}
			}
			if fmt.Sprint(recorded) != fmt.Sprint(want) || len(rep.Unknown) != 0 {
				t.Fatalf("the ledger completed %q (unknown %d), want %q", recorded, len(rep.Unknown), want)
			}
			// The last request holds the whole conversation: each tool
			// message answers the call of the assistant message before it
			// in order, under its wire ID.
			f.mu.Lock()
			last := f.reqs[len(f.reqs)-1]
			f.mu.Unlock()
			wire, answered := wireCalls(t, last)
			if fmt.Sprint(wire) != fmt.Sprint(answered) || len(wire) != len(tc.keep) {
				t.Fatalf("the provider was sent calls %q answered as %q", wire, answered)
			}
			seen := map[string]bool{}
			for i, id := range wire {
				if seen[id] {
					t.Errorf("wire ID %q is used twice in the conversation", id)
				}
				seen[id] = true
				switch {
				case tc.keep[i] != "" && id != tc.keep[i]:
					t.Errorf("call %d went back as %q, not as the provider's %q", i, id, tc.keep[i])
				case id == "" || len(id) > 256 || !utf8.ValidString(id) || strings.ContainsRune(id, utf8.RuneError):
					t.Errorf("call %d went back under the unusable ID %q", i, id)
				}
			}
		})
	}
}
