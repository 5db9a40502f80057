package a2a

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// general decodes an answer the general way: the envelope, then the
// result, each by its own rules (what Runner.event falls back to).
func general(r *Runner, call rpcCall, data []byte, t *tracker) (sdk.Event, error) {
	env, err := r.c.envelope(call, data)
	if err != nil {
		return nil, err
	}
	ev, err := call.decode(env.Result)
	if err != nil {
		return nil, t.protocol("%s", err)
	}
	return ev, nil
}

// TestOnePassDecodeMatchesTheGeneralWay: Runner.event's one pass gives
// each answer the event, or the error, the envelope and the result decoded
// apart give, well formed or not, streamed or not.
func TestOnePassDecodeMatchesTheGeneralWay(t *testing.T) {
	r := newRunner(t, Options{Remotes: []Remote{{Name: "r", CardURL: "http://127.0.0.1:1/card", Endpoint: "http://127.0.0.1:1/rpc"}}})
	frames := []string{
		`{"jsonrpc":"2.0","id":"req-1","result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"text":"hi"}]}}}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":"req\u002d1","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
		`{"jsonrpc":"2.0","id":"req-2","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1"}}}`,
		`{"jsonrpc":"1.0","id":"req-1","result":{"task":{"id":"t1"}}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1"}},"error":{"code":-32000,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":null,"error":{"code":-32001,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":"req-1","error":"no"}`,
		`{"jsonrpc":"2.0","id":"req-1","result":null}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":5}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1"},"message":{"messageId":"m"}}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":5}}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1"}}`,
		`not json`,
	}
	frames = append(frames, onePassSeeds...)
	for _, stream := range []bool{true, false} {
		call := rpcCall{remote: Remote{Name: "r"}, method: "SendStreamingMessage", stream: stream, id: "req-1"}
		for _, f := range frames {
			t.Run(fmt.Sprintf("stream=%v/%s", stream, f), func(t *testing.T) {
				wantEv, wantErr := general(r, call, []byte(f), &tracker{remote: "r", method: call.method})
				ev, err := r.event(call, []byte(f), &tracker{remote: "r", method: call.method})
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || reflect.TypeOf(err) != reflect.TypeOf(wantErr) {
					t.Fatalf("error %v (%T), the general way %v (%T)", err, err, wantErr, wantErr)
				}
				if !reflect.DeepEqual(ev, wantEv) {
					t.Fatalf("event %#v, the general way %#v", ev, wantEv)
				}
			})
		}
	}
}

// onePassSeeds are answers at the one pass's edges: what the fixture peer
// sends (a task with its history and timestamps, a named artifact, the
// last chunk), each kind of part, metadata, keys encoding/json would match
// by case, repeated keys, escapes, nulls and trailing bytes.
var onePassSeeds = []string{
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED","timestamp":"2026-12-06T00:44:01.893Z"},"history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"echo:benchmark"}]}]}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-06T00:44:01.893Z"}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"result","name":"result","parts":[{"text":"benchmark","mediaType":"text/plain"}]},"lastChunk":true}}}`,
	` {"id":"req-1", "result" : {"artifactUpdate":{"append":false,"taskId":"t1","contextId":"c1","metadata":{"usage":{"tokens":3}},"artifact":{"artifactId":"a","description":"d","extensions":["x"],"metadata":{},"parts":[{"raw":"AQID","filename":"f.bin"},{"data":{"k":[1,2.5,"x"]}},{"url":"https://x.test/a","mediaType":"a/b"},{"text":"t","metadata":{"m":null}}]}}},"jsonrpc":"2.0"}` + "\n",
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c1","artifacts":[],"history":[],"metadata":{"usage":{"in":"12"}},"status":{"state":"TASK_STATE_UNSPECIFIED","message":{"messageId":"m","parts":[],"role":"ROLE_UNSPECIFIED","referenceTaskIds":["t0"],"extensions":[],"taskId":"t1","contextId":"c1"}}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"caf\u00e9 \"q\" é"}],"unknown":{"deep":[{"a":[1,{"b":"}"}]}]}}},"extra":[1,"]"]}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"ID":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","id":"t2","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","Result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"i\u0064":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":null,"contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"yesterday"}}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}} x`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c\x"}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"` + "c\xff" + `"}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m","parts":[{"text":"a","url":"u"}]}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m","parts":[{"text":"a","url":""}]}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m","parts":[{"raw":"not base64!"}]}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m","parts":[{}]}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","append":tru}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","skip":01}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1",}}}`,
	`{"jsonrpc":"2.0","id":"req-1","error":null,"result":{"task":{"id":"t1"}}}`,
}

// TestOnePassAdmitsWhatPeersSend: the answers real peers send, the
// fixture's four events among them, never fall back to the general way.
func TestOnePassAdmitsWhatPeersSend(t *testing.T) {
	for _, s := range onePassSeeds[:6] {
		if _, ok := decodeOnePass([]byte(s), "req-1", true); !ok {
			t.Errorf("the one pass fell back on %s", s)
		}
	}
}

// FuzzOnePassDecode: what the one pass admits, the general way admits
// too, as the same event; what it does not admit is the general way's to
// decide.
func FuzzOnePassDecode(f *testing.F) {
	for _, s := range onePassSeeds {
		f.Add([]byte(s), true)
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m","parts":[{"text":"hi"}]}}}`), false)
	r := newRunner(f, Options{Remotes: []Remote{{Name: "r", CardURL: "http://127.0.0.1:1/card", Endpoint: "http://127.0.0.1:1/rpc"}}})
	f.Fuzz(func(t *testing.T, data []byte, stream bool) {
		ev, ok := decodeOnePass(data, "req-1", stream)
		if !ok {
			if ev != nil {
				t.Fatal("an event from a pass that failed")
			}
			return
		}
		call := rpcCall{remote: Remote{Name: "r"}, method: "SendStreamingMessage", stream: stream, id: "req-1"}
		want, err := general(r, call, data, &tracker{remote: "r", method: call.method})
		if err != nil {
			t.Fatalf("the one pass admitted %q, the general way refused it: %v", data, err)
		}
		if !reflect.DeepEqual(ev, want) {
			t.Fatalf("%q: one pass %#v, the general way %#v", data, ev, want)
		}
	})
}

// BenchmarkDecodeStreamFrame: one stream frame (an artifact update) to its
// event, in one pass and the general way.
func BenchmarkDecodeStreamFrame(b *testing.B) {
	r := newRunner(b, Options{Remotes: []Remote{{Name: "r", CardURL: "http://127.0.0.1:1/card", Endpoint: "http://127.0.0.1:1/rpc"}}})
	call := rpcCall{remote: Remote{Name: "r"}, method: "SendStreamingMessage", stream: true, id: "0b7c8a4e-5f7e-4d5a-9a63-2a4c0f0e8f11"}
	frame := []byte(`{"jsonrpc":"2.0","id":"` + call.id + `","result":{"artifactUpdate":{"taskId":"5c3e0c52-3a7b-4f0e-8d0a-0d3c6a3c9b7e","contextId":"2e1f3c4d-5b6a-4789-8a9b-0c1d2e3f4a5b","artifact":{"artifactId":"result","parts":[{"text":"Reviewed: the diff looks fine.","mediaType":"text/plain"}]},"lastChunk":true}}}`)
	for _, way := range []string{"one-pass", "general"} {
		b.Run("way="+way, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if way == "one-pass" {
					_, err = r.event(call, frame, &tracker{})
				} else {
					_, err = general(r, call, frame, &tracker{})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEveryChildFetchesTheCardAndAChangedOneIsAdmittedAgain: each remote
// child fetches the card; the same bytes reuse the last admission, a card
// changed since is admitted again by every rule (here refused: its
// interface is no longer the configured endpoint), and a refusal is not
// kept: the good card after it is admitted again.
func TestEveryChildFetchesTheCardAndAChangedOneIsAdmittedAgain(t *testing.T) {
	p := newFaultPeer(t)
	p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
		result(w, req, task("t1", "c1", "TASK_STATE_COMPLETED", textArtifact("a1", "done")))
	})
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}})
	good := goodCard(p.endpoint())
	moved := goodCard(p.srv.URL + "/elsewhere")
	serve := func(card map[string]any) {
		p.setCard(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(mustJSON(t, card))
		})
	}
	for i, c := range []struct {
		card map[string]any
		want outcome.Status
	}{{good, outcome.Completed}, {good, outcome.Completed}, {moved, outcome.Failed}, {good, outcome.Completed}, {moved, outcome.Failed}} {
		serve(c.card)
		h := run(t, r, spec("peer", "x", false))
		if got := h.Result().Outcome.Status; got != c.want {
			t.Fatalf("child %d: %s (%+v), want %s", i, got, h.Result().Outcome, c.want)
		}
		if c.want == outcome.Completed && h.Report().CardDigest != cardDigest(mustJSON(t, c.card)) {
			t.Errorf("child %d: card digest %s", i, h.Report().CardDigest)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cardGets != 5 {
		t.Errorf("%d card fetches for 5 children", p.cardGets)
	}
}

func cardDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
