// Package measure holds the fixture of the reference's measurement method,
// so that the figures the README sets beside the reference's are taken the
// same way: a loopback HTTP server that serves scripted SSE in the Chat
// Completions wire format, two model calls a sample (the first asks
// shell.run for one real printf, the second streams the final answer as 32
// deltas of 16 bytes), and nearest-rank percentiles over the samples.
//
// The benchmarks that use it (BenchmarkReferenceCoreRun in the root
// package, BenchmarkReferenceCLI and BenchmarkReferenceACP in examples/pablo)
// check every sample as the reference's harness does: the real shell
// result reached the model, the final output is the 512 bytes streamed,
// exactly two model requests were made, and the task ended cleanly.
// scripts/measure.sh runs them all.
package measure

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The scripted task: the shell command the first answer asks for, the
// bytes it prints, and the final answer's shape.
const (
	// Command is the one real shell command of a sample.
	Command = "printf 'pablo-measure %s' ok"
	// CommandOutput is what Command prints.
	CommandOutput = "pablo-measure ok"
	// Deltas is the number of text deltas of the final answer.
	Deltas = 32
	// DeltaBytes is the size of each delta.
	DeltaBytes = 16
)

// Sandbox is one of the two ways every figure is taken: TOML is what it
// adds to the deployment.
type Sandbox struct{ Name, TOML string }

// Sandboxes are the default sandbox (bubblewrap) and the sandbox off under
// a literal command policy that allows the printf (without one an
// unsandboxed shell.run waits for an approver). The reference has no
// sandbox.
func Sandboxes() []Sandbox {
	return []Sandbox{
		{"sandbox=default", ""},
		{"sandbox=off", "[options.shell.sandbox]\nmode = \"off\"\n[options.shell.commands]\ndefault = \"deny\"\n" +
			"allow = [{ id = \"measure.printf\", executable = \"/usr/bin/printf\", args = [], match = \"prefix\" }]\n"},
	}
}

// Deployment is the measurement's deployment document: the model an
// OpenAI-compatible provider whose endpoint the host points at the
// Provider (--fixture-endpoint, HostOptions.FixtureEndpoint), shell.run on
// in the sandbox sb.
func Deployment(sb Sandbox) string {
	return "schema_version = 1\n[options.model]\nprovider = \"openai_compatible\"\nid = \"fixture\"\n" +
		"endpoint = \"https://fixture.invalid/v1/chat/completions\"\n[options.shell]\nenabled = true\n" + sb.TOML
}

// Warmups is the number of samples the method drops before it measures.
const Warmups = 5

// FinalText is the whole final answer: Deltas deltas of DeltaBytes bytes.
func FinalText() string { return strings.Join(deltas(), "") }

func deltas() []string {
	out := make([]string, Deltas)
	for i := range out {
		out[i] = fmt.Sprintf("delta %02d of %d.       ", i+1, Deltas)[:DeltaBytes]
	}
	return out
}

// Provider is the loopback Chat Completions server of one benchmark. It
// answers a request without a tool result with the shell_run call, and one
// whose last message is the tool result with the final answer. Reset
// starts a sample; Check ends it.
type Provider struct {
	srv      *httptest.Server
	requests atomic.Int32
	first    atomic.Int64 // unix ns of the sample's first request
	mu       sync.Mutex
	problems []string
}

// NewProvider starts the server on 127.0.0.1. Close stops it.
func NewProvider() *Provider {
	p := &Provider{}
	first, final := toolCallFrames(), finalFrames()
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.first.CompareAndSwap(0, time.Now().UnixNano())
		p.requests.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			p.problem("reading a request: %v", err)
			return
		}
		frames := first
		if tool, ok := lastToolResult(body); ok {
			if !strings.Contains(tool, CommandOutput) {
				p.problem("the tool result the model was sent lacks the shell's output %q: %.300s", CommandOutput, tool)
			}
			frames = final
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		for _, f := range frames {
			io.WriteString(w, f)
			if fl != nil {
				fl.Flush()
			}
		}
	}))
	return p
}

// Endpoint is the URL a deployment's model is pointed at
// (--fixture-endpoint, HostOptions.FixtureEndpoint).
func (p *Provider) Endpoint() string { return p.srv.URL + "/v1/chat/completions" }

// Close stops the server.
func (p *Provider) Close() { p.srv.Close() }

// Reset starts a sample: no request seen, no problem recorded.
func (p *Provider) Reset() {
	p.requests.Store(0)
	p.first.Store(0)
	p.mu.Lock()
	p.problems = nil
	p.mu.Unlock()
}

// FirstRequest is when the sample's first request reached the server (the
// zero time when none did).
func (p *Provider) FirstRequest() time.Time {
	ns := p.first.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Check ends a sample of one task: it fails unless exactly two requests
// came and the second carried the shell's real output.
func (p *Provider) Check() error { return p.CheckTasks(1) }

// CheckTasks ends a sample of n tasks: it fails unless exactly 2n requests
// came and every second one carried the shell's real output.
func (p *Provider) CheckTasks(n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		return fmt.Errorf("the provider fixture saw: %s", strings.Join(p.problems, "; "))
	}
	if got := p.requests.Load(); int(got) != 2*n {
		return fmt.Errorf("%d model requests for %d task(s), want exactly %d", got, n, 2*n)
	}
	return nil
}

func (p *Provider) problem(format string, args ...any) {
	p.mu.Lock()
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

// lastToolResult is the content of the request's last message when it is
// a tool result.
func lastToolResult(body []byte) (string, bool) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return "", false
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "tool" {
		return "", false
	}
	var s string
	if json.Unmarshal(last.Content, &s) == nil {
		return s, true
	}
	return string(last.Content), true
}

func frame(s string) string { return "data: " + s + "\n\n" }

func toolCallFrames() []string {
	args, _ := json.Marshal(map[string]string{"command": Command, "cwd": "."})
	quoted, _ := json.Marshal(string(args))
	return []string{
		frame(`{"id":"m","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`),
		frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"shell_run","arguments":` + string(quoted) + `}}]},"finish_reason":null}]}`),
		frame(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
		frame(`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`),
		frame("[DONE]"),
	}
}

func finalFrames() []string {
	out := []string{frame(`{"id":"m","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)}
	for _, d := range deltas() {
		text, _ := json.Marshal(d)
		out = append(out, frame(`{"choices":[{"index":0,"delta":{"content":`+string(text)+`},"finish_reason":null}]}`))
	}
	return append(out,
		frame(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
		frame(`{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":128,"total_tokens":248}}`),
		frame("[DONE]"))
}

// Percentile is the nearest-rank percentile p (0 < p ≤ 1) of samples: the
// smallest sample at or above which p of them lie (p99 of 30 samples is
// their maximum). It sorts a copy; it is zero for no samples.
func Percentile[T int64 | time.Duration](samples []T, p float64) T {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
