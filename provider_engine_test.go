package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

const providerTestKey = "sk-provider-test-0123456789"

// chatFixture is a loopback OpenAI-compatible server scripted as the
// reference measurement (REFERENCE §6.1): the first request gets one
// fs_read tool call, the second the final answer as 32 deltas of 16 bytes.
type chatFixture struct {
	srv      *httptest.Server
	requests atomic.Int32
	conns    atomic.Int32
	mu       sync.Mutex
	auth     []string
	models   []string
	// fail503 lists model IDs answered with HTTP 503.
	fail503 map[string]bool
	// failAfterDelta lists model IDs whose stream breaks after one text
	// delta.
	failAfterDelta map[string]bool
}

func finalDeltas() []string {
	out := make([]string, 32)
	for i := range out {
		out[i] = fmt.Sprintf("delta %02d of 32. ", i+1)[:16]
	}
	return out
}

func newChatFixture(t testing.TB, tls bool) *chatFixture {
	f := &chatFixture{fail503: map[string]bool{}, failAfterDelta: map[string]bool{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.models = append(f.models, body.Model)
		f.mu.Unlock()
		if f.fail503[body.Model] {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		n := f.requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(s string) { io.WriteString(w, "data: "+s+"\n\n"); fl.Flush() }
		send(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
		if f.failAfterDelta[body.Model] {
			send(`{"choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}`)
			panic(http.ErrAbortHandler) // the stream breaks mid-response
		}
		// The tool result comes back as the last message: answer then.
		if n%2 == 1 {
			send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"fs_read","arguments":""}}]},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"evidence.md\"}"}}]},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			send(`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`)
		} else {
			for _, d := range finalDeltas() {
				q, _ := json.Marshal(d)
				send(`{"choices":[{"index":0,"delta":{"content":` + string(q) + `},"finish_reason":null}]}`)
			}
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			send(`{"choices":[],"usage":{"prompt_tokens":200,"completion_tokens":128,"total_tokens":328}}`)
		}
		send("[DONE]")
	})
	if tls {
		f.srv = httptest.NewUnstartedServer(h)
		f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				f.conns.Add(1)
			}
		}
		f.srv.StartTLS()
	} else {
		f.srv = httptest.NewUnstartedServer(h)
		f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				f.conns.Add(1)
			}
		}
		f.srv.Start()
	}
	t.Cleanup(f.srv.Close)
	return f
}

// providerDeployment writes a deployment with body and a workspace holding
// evidence.md, and loads it.
func providerDeployment(t testing.TB, body string, mod func(*LoadOptions)) *Deployment {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("INV-1042 paid on 2024-03-01\n"), 0o600)
	doc := "schema_version = 1\n[options.shell]\nenabled = false\n" +
		"[credentials.local]\nconsumer = \"provider.openai_compatible\"\nsources = [{ kind = \"environment\", name = \"LOCAL_KEY\" }]\n" + body
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	opts := LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}, LoopbackHTTP: true}
	if mod != nil {
		mod(&opts)
	}
	d, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func lookupKey(name string) (string, bool) {
	if name == "LOCAL_KEY" {
		return providerTestKey, true
	}
	return "", false
}

func openAICompatible(endpoint string) string {
	return "[options.model]\nprovider = \"openai_compatible\"\nid = \"local-model\"\ncredential = \"local\"\nendpoint = \"" + endpoint + "\"\n"
}

func runProviderTask(t testing.TB, d *Deployment, host HostOptions) (*TaskObject, []event.Event) {
	t.Helper()
	rt, err := d.NewRuntime(context.Background(), host)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	return runTask(t, rt, "Was INV-1042 paid?")
}

// The reference measurement task, end to end through Runtime: two model
// calls, one fs.read tool call, 32 deltas of 16 bytes.
func TestProviderTaskThroughRuntime(t *testing.T) {
	f := newChatFixture(t, false)
	d := providerDeployment(t, openAICompatible(f.srv.URL+"/v1/chat/completions"), nil)
	obj, events := runProviderTask(t, d, HostOptions{LookupEnv: lookupKey})
	if obj.Outcome.Status != event.StatusCompleted || *obj.Outcome.Output != strings.Join(finalDeltas(), "") {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
	if f.requests.Load() != 2 || obj.Accounting.ModelCalls.N != 2 || obj.Accounting.ToolCalls.N != 1 {
		t.Fatalf("requests %d accounting %+v", f.requests.Load(), obj.Accounting)
	}
	if obj.Accounting.Usage.InputTokens.N != 300 || obj.Accounting.Usage.OutputTokens.N != 138 {
		t.Fatalf("usage %+v", obj.Accounting.Usage)
	}
	deltas := 0
	var toolResult string
	for _, ev := range events {
		switch ev.Type {
		case event.TextDelta:
			deltas++
		case event.ToolFinished:
			toolResult = string(ev.Result)
		}
	}
	if deltas != 32 || !strings.Contains(toolResult, "INV-1042") {
		t.Fatalf("deltas %d tool result %s", deltas, toolResult)
	}
	for _, a := range f.auth {
		if a != "Bearer "+providerTestKey {
			t.Fatalf("auth header %q", a)
		}
	}
}

// A locked deployment with max_total_tokens set and no attested bound is
// rejected before any request leaves the process.
func TestLockedTokenCeilingWithoutBoundSendsNothing(t *testing.T) {
	f := newChatFixture(t, true)
	body := "[deployment]\nlocked = true\n[options.limits]\nmax_total_tokens = \"100000\"\n" + openAICompatible(f.srv.URL+"/v1/chat/completions")
	d := providerDeployment(t, body, func(o *LoadOptions) { o.LoopbackHTTP = false })
	if !d.Locked() {
		t.Fatal("the deployment must be locked")
	}
	obj, _ := runProviderTask(t, d, HostOptions{LookupEnv: lookupKey})
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailAccountingBoundViolated || obj.Outcome.Delivery != outcome.NotSent {
		b, _ := json.Marshal(obj.Outcome)
		t.Fatalf("outcome %s", b)
	}
	if f.conns.Load() != 0 {
		t.Fatalf("%d connection(s) reached the provider", f.conns.Load())
	}
}

func TestFixtureModelRefusesLockAndNonLoopback(t *testing.T) {
	d := providerDeployment(t, openAICompatible("https://models.example/v1/chat/completions"), nil)
	for _, ep := range []string{"https://127.0.0.1:1/v1", "http://localhost:1/v1", "http://10.0.0.1:1/v1", "http://127.0.0.1:1/v1?k=v", "http://u:p@127.0.0.1:1/v1", "not a url"} {
		if _, err := d.FixtureModel(ep); !errors.Is(err, ErrConfig) {
			t.Errorf("%q: want a config error, got %v", ep, err)
		}
	}
	for _, ep := range []string{"http://127.0.0.1:1/v1/chat/completions", "http://[::1]:1/responses"} {
		if _, err := d.FixtureModel(ep); err != nil {
			t.Errorf("%q: %v", ep, err)
		}
	}
	locked := providerDeployment(t, "[deployment]\nlocked = true\n"+openAICompatible("https://models.example/v1/chat/completions"), func(o *LoadOptions) { o.LoopbackHTTP = false })
	if _, err := locked.FixtureModel("http://127.0.0.1:1/v1/chat/completions"); !errors.Is(err, ErrConfig) {
		t.Fatalf("a fixture under lock must be refused: %v", err)
	}
}

// The fixture serves every provider with the fixed fake key, and a route's
// fallback runs through it: a 503 on the first entry, success on the second.
func TestFixtureRouteFallsBackAfter503(t *testing.T) {
	f := newChatFixture(t, false)
	f.fail503["first-id"] = true
	body := "[options.models.first]\nprovider = \"vercel\"\nid = \"first-id\"\ncredential = \"gw\"\n" +
		"[options.models.second]\nprovider = \"openrouter\"\nid = \"second-id\"\ncredential = \"or\"\n" +
		"[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n" +
		"[options]\nmodel_route = \"main\"\n" +
		// Fallback alone: the retries of options.model.retry are off.
		"[options.model.retry]\nmax_attempts = 0\n" +
		"[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n" +
		"[credentials.or]\nconsumer = \"provider.openrouter\"\nsources = [{ kind = \"environment\", name = \"OR\" }]\n"
	d := providerDeployment(t, body, nil)
	m, err := d.FixtureModel(f.srv.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	rm, ok := routeOf(m)
	if !ok {
		t.Fatal("a route builds a Router")
	}
	var attempts []event.RouteAttempt
	s := &engine.RouteSession{EndAttempt: func(_ context.Context, a event.RouteAttempt, _ *model.Response, _ error) {
		attempts = append(attempts, a)
	}}
	resp, err := rm.GenerateRouted(context.Background(), s, &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, func(string) error { return nil })
	if err != nil || len(resp.ToolCalls) != 1 {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if len(attempts) != 2 || attempts[1].SelectionReason != "fallback" || *attempts[0].RetryClass != "service_unavailable" || attempts[1].Entry != "second" {
		b, _ := json.Marshal(attempts)
		t.Fatalf("attempts %s", b)
	}
	for _, a := range f.auth {
		if a != "Bearer "+engine.FixtureKey {
			t.Fatalf("the fixture saw %q, not the fake key", a)
		}
	}
	// The whole task also completes through Runtime with the fixture model.
	f2 := newChatFixture(t, false)
	f2.fail503["first-id"] = true
	m2, _ := d.FixtureModel(f2.srv.URL + "/v1/chat/completions")
	obj, events := runProviderTask(t, d, HostOptions{Model: m2})
	if obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj.Outcome)
		t.Fatalf("outcome %s", b)
	}
	// Each attempt is its own model call on the ledger: the failed first
	// attempt and the fallback of the first turn, then the sticky second
	// turn.
	if obj.Accounting.ModelCalls.N != 3 {
		t.Fatalf("model calls %s, want 3 (503, fallback, sticky)", obj.Accounting.ModelCalls)
	}
	var reasons []string
	for _, ev := range events {
		if ev.Type == event.ModelFinished && ev.ModelRoute != nil {
			reasons = append(reasons, ev.ModelRoute.SelectionReason+"/"+ev.Status)
		}
	}
	if strings.Join(reasons, " ") != "initial/failed fallback/completed sticky/completed" {
		t.Fatalf("route records on events: %v", reasons)
	}
}

// A 503 after a text delta has escaped does not fall back: the task fails.
func TestNoFallbackAfterADelta(t *testing.T) {
	f := newChatFixture(t, false)
	f.failAfterDelta["first-id"] = true
	body := "[options.models.first]\nprovider = \"vercel\"\nid = \"first-id\"\ncredential = \"gw\"\n" +
		"[options.models.second]\nprovider = \"openrouter\"\nid = \"second-id\"\ncredential = \"or\"\n" +
		"[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n" +
		"[options]\nmodel_route = \"main\"\n" +
		"[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n" +
		"[credentials.or]\nconsumer = \"provider.openrouter\"\nsources = [{ kind = \"environment\", name = \"OR\" }]\n"
	d := providerDeployment(t, body, nil)
	m, _ := d.FixtureModel(f.srv.URL + "/v1/chat/completions")
	obj, _ := runProviderTask(t, d, HostOptions{Model: m})
	if obj.Outcome.Status != event.StatusFailed || obj.Accounting.ModelCalls.N != 1 {
		b, _ := json.Marshal(obj)
		t.Fatalf("want one failed attempt and no fallback: %s", b)
	}
}

func TestMissingCredentialFailsBeforeAnyRequest(t *testing.T) {
	f := newChatFixture(t, false)
	d := providerDeployment(t, openAICompatible(f.srv.URL+"/v1/chat/completions"), nil)
	_, err := d.NewRuntime(context.Background(), HostOptions{})
	if err == nil || strings.Contains(err.Error(), providerTestKey) || f.conns.Load() != 0 {
		t.Fatalf("err %v conns %d", err, f.conns.Load())
	}
}

// BenchmarkProviderTask is the reference measurement method (§6.1) run in
// process: one whole task through Runtime against a loopback
// OpenAI-compatible server, two model calls, one fs.read, 32 deltas of 16
// bytes. Building the runtime is outside the timer.
func BenchmarkProviderTask(b *testing.B) {
	f := newChatFixture(b, false)
	d := providerDeployment(b, openAICompatible(f.srv.URL+"/v1/chat/completions"), nil)
	rt, err := d.NewRuntime(context.Background(), HostOptions{LookupEnv: lookupKey})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	b.ReportAllocs()
	for b.Loop() {
		obj, err := rt.Run(context.Background(), "Was INV-1042 paid?")
		if err != nil || obj.Outcome.Status != event.StatusCompleted {
			b.Fatalf("%v %+v", err, obj)
		}
	}
}
