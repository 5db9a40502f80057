package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/model"
)

// fakeClock is the module's one test clock: time moves only when a test
// advances it, and a test can wait until the connection has armed a timer.
type fakeClock = clock.Manual

func newFakeClock() *fakeClock { return clock.NewManual(time.Unix(1_800_000_000, 0)) }

// frame is one decoded frame the agent wrote.
type frame struct {
	raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// update is the update of a session/update frame.
func (f frame) update() map[string]any {
	var p struct {
		Update map[string]any `json:"update"`
	}
	json.Unmarshal(f.Params, &p)
	return p.Update
}

// peer is a test client on the two pipes of a Serve.
type peer struct {
	t      *testing.T
	in     *io.PipeWriter // the client's writes, the agent's input
	out    *bufio.Reader
	outR   *io.PipeReader
	served chan error
	cancel context.CancelFunc
	mu     sync.Mutex
	frames []frame
}

// serve starts Serve on fresh pipes. The test ends it by closing the
// input (EOF) unless it ended already.
func serve(t *testing.T, sessions *pablo.Sessions, opts acp.Options) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &peer{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<16), outR: outR, served: make(chan error, 1), cancel: cancel}
	go func() {
		err := acp.Serve(ctx, sessions, inR, outW, opts)
		outW.Close()
		p.served <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-p.served
		cancel()
	})
	return p
}

// send writes one line (a newline is added).
func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

func (p *peer) request(id int, method string, params any) {
	p.t.Helper()
	enc, _ := json.Marshal(params)
	p.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + string(enc) + `}`)
}

func (p *peer) notify(method string, params any) {
	p.t.Helper()
	enc, _ := json.Marshal(params)
	p.send(`{"jsonrpc":"2.0","method":"` + method + `","params":` + string(enc) + `}`)
}

// handled returns once Serve has handled every line sent before it. The
// reader loop handles one frame at a time and reads the next only after
// the last one is handled; an unbuffered pipe write returns only once it
// is read. So an ignored notification sent after them is read, and its
// write returns, only after they are handled: no sleep, no hook.
func (p *peer) handled() {
	p.t.Helper()
	p.notify("$/test_barrier", map[string]any{})
}

// next reads the next frame: it must be one JSON-RPC 2.0 object on one
// line, nothing else ever reaches the output.
func (p *peer) next() (frame, bool) {
	p.t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		if line != "" {
			p.t.Fatalf("output ended inside a frame: %q", line)
		}
		return frame{}, false
	}
	var f frame
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &probe); err != nil || string(probe["jsonrpc"]) != `"2.0"` {
		p.t.Fatalf("not a JSON-RPC frame on the output: %q", line)
	}
	json.Unmarshal([]byte(line), &f)
	f.raw = line
	p.mu.Lock()
	p.frames = append(p.frames, f)
	p.mu.Unlock()
	return f, true
}

// until reads frames up to the answer to id and returns the frames before
// it and the answer.
func (p *peer) until(id int) ([]frame, frame) {
	p.t.Helper()
	var before []frame
	for {
		f, ok := p.next()
		if !ok {
			p.t.Fatalf("the output ended before the answer to %d", id)
		}
		if f.Method == "" && string(f.ID) == strconv.Itoa(id) {
			return before, f
		}
		before = append(before, f)
	}
}

// call sends a request and returns its answer, failing on any frame in
// between.
func (p *peer) call(id int, method string, params any) frame {
	p.t.Helper()
	p.request(id, method, params)
	before, f := p.until(id)
	if len(before) > 0 {
		p.t.Fatalf("frames before the answer to %s: %v", method, before)
	}
	return f
}

// end closes the input and returns Serve's result.
func (p *peer) end() error {
	p.in.Close()
	go io.Copy(io.Discard, p.outR)
	err := <-p.served
	p.served <- err
	return err
}

// drain reads every frame until the output closes.
func (p *peer) drain() []frame {
	var fs []frame
	for {
		f, ok := p.next()
		if !ok {
			return fs
		}
		fs = append(fs, f)
	}
}

func (p *peer) initialize(ext ...string) frame {
	p.t.Helper()
	meta := map[string]any{}
	for _, e := range ext {
		meta[e] = true
	}
	f := p.call(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": meta}})
	if f.Error != nil {
		p.t.Fatalf("initialize: %s", f.raw)
	}
	return f
}

func (p *peer) newSession(id int, cwd string) string {
	p.t.Helper()
	f := p.call(id, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if f.Error != nil || json.Unmarshal(f.Result, &r) != nil || r.SessionID == "" {
		p.t.Fatalf("session/new: %s", f.raw)
	}
	return r.SessionID
}

func textPrompt(session, text string) map[string]any {
	return map[string]any{"sessionId": session, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

func stopReasonOf(t *testing.T, f frame) string {
	t.Helper()
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if f.Error != nil || json.Unmarshal(f.Result, &r) != nil {
		t.Fatalf("not a prompt result: %s", f.raw)
	}
	return r.StopReason
}

// waitTool is a host tool: test.wait blocks until its call is cancelled,
// test.say streams its chunks as live output and completes.
type waitTool struct {
	started chan string // a test.wait call started
}

func (w *waitTool) Tools() []pablo.ToolSpec {
	obj := json.RawMessage(`{"type":"object","properties":{"chunks":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}`)
	return []pablo.ToolSpec{
		{ID: "test.wait", Description: "waits until cancelled", InputSchema: obj},
		{ID: "test.say", Description: "streams chunks", InputSchema: obj},
	}
}

func (w *waitTool) Call(ctx context.Context, call pablo.ToolInvocation) pablo.ToolResult {
	var args struct{ Chunks []string }
	json.Unmarshal(call.Arguments, &args)
	for _, c := range args.Chunks {
		pablo.ToolOutput(ctx)("stdout", []byte(c))
	}
	if call.Tool == "test.wait" {
		w.started <- call.ID
		<-ctx.Done()
		return pablo.ToolCompleted(map[string]any{"waited": true})
	}
	return pablo.ToolCompleted(map[string]any{"said": len(args.Chunks)})
}

// fixture is a session handler over a scripted model and the test tools.
type fixture struct {
	sessions *pablo.Sessions
	runtime  func(context.Context) (*pablo.Runtime, error)
	tools    *waitTool
	ws       string
}

type fixtureOptions struct {
	script   string
	sessions pablo.SessionOptions
	runtime  func(*pablo.RuntimeOptions)
}

func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	s, err := pablo.ParseScript([]byte(o.script))
	if err != nil {
		t.Fatal(err)
	}
	set, err := authority.New(authority.Config{Host: []authority.ID{"test.wait", "test.say"}})
	if err != nil {
		t.Fatal(err)
	}
	tools := &waitTool{started: make(chan string, 16)}
	ropts := pablo.RuntimeOptions{Model: pablo.NewScriptModel(s), Authority: set, Catalogs: []pablo.ToolCatalog{tools}}
	if o.runtime != nil {
		o.runtime(&ropts)
	}
	rt, err := pablo.NewRuntime(ropts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	so := o.sessions
	so.Runtime = func(context.Context) (*pablo.Runtime, error) { return rt, nil }
	sessions, err := pablo.NewSessions(so)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{sessions: sessions, runtime: so.Runtime, tools: tools, ws: t.TempDir()}
}

// recordModel wraps a model and keeps the last user message it was given.
type recordModel struct {
	model.Model
	mu   sync.Mutex
	last string
}

func (m *recordModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	m.mu.Lock()
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			m.last = msg.Content
		}
	}
	m.mu.Unlock()
	return m.Model.Generate(ctx, req, emit)
}

func (m *recordModel) lastInput() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// feedModel streams the deltas a test feeds it: each turn ends at "".
type feedModel struct {
	deltas chan string
}

func (m *feedModel) Info() model.Info { return model.Info{Provider: "feed", Model: "feed"} }

func (m *feedModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	var text strings.Builder
	for {
		select {
		case d := <-m.deltas:
			if d == "" {
				return &model.Response{Text: text.String(), FinishReason: model.FinishStop}, nil
			}
			if err := emit(d); err != nil {
				return nil, err
			}
			text.WriteString(d)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func jsonUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
