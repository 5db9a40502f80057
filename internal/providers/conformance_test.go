package providers

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pabloagent/pablo/model"
)

// adapter is one provider under the shared conformance table.
type adapter struct {
	name     Provider
	wire     wire
	build    func(c *Client, endpoint string) Model
	costWire bool
	// authHeader and authValue are the credential header the adapter
	// sends ("Authorization: Bearer ..." when empty).
	authHeader, authValue string
	// bodyless says the request body names no model and no stream flag
	// (Gemini: the endpoint names the model and the method streams).
	bodyless bool
}

func adapters() []adapter {
	chat := func(p Provider) func(c *Client, endpoint string) Model {
		return func(c *Client, endpoint string) Model {
			m, err := NewChat(c, ChatOptions{Provider: p, Endpoint: endpoint, Model: "test/model", Secret: testSecret})
			if err != nil {
				panic(err)
			}
			return m
		}
	}
	return []adapter{
		{name: OpenAICompatible, wire: chatWire{}, build: chat(OpenAICompatible)},
		{name: Vercel, wire: chatWire{cost: true}, build: chat(Vercel), costWire: true},
		{name: OpenRouter, wire: chatWire{cost: true}, build: chat(OpenRouter), costWire: true},
		{name: OpenResponses, wire: respWire{}, build: func(c *Client, endpoint string) Model {
			m, err := NewResponses(c, ResponsesOptions{Endpoint: endpoint, Model: "test/model", Secret: testSecret})
			if err != nil {
				panic(err)
			}
			return m
		}},
		{name: OpenAI, wire: respWire{}, build: func(c *Client, endpoint string) Model {
			m, err := NewResponses(c, ResponsesOptions{Provider: OpenAI, Endpoint: endpoint, Model: "test/model", Secret: testSecret})
			if err != nil {
				panic(err)
			}
			return m
		}},
		{name: Gemini, wire: gemWire{}, authHeader: "x-goog-api-key", authValue: testSecret, bodyless: true, build: func(c *Client, endpoint string) Model {
			m, err := NewGemini(c, GeminiOptions{Endpoint: endpoint, Model: "test/model", Secret: testSecret})
			if err != nil {
				panic(err)
			}
			return m
		}},
		{name: Anthropic, wire: anthWire{}, authHeader: "x-api-key", authValue: testSecret, build: func(c *Client, endpoint string) Model {
			m, err := NewAnthropic(c, AnthropicOptions{Endpoint: endpoint, Model: "test/model", Secret: testSecret})
			if err != nil {
				panic(err)
			}
			return m
		}},
	}
}

var testRequest = &model.Request{
	Instructions:    "Be brief.",
	Messages:        []model.Message{{Role: model.RoleUser, Content: "What was paid?"}},
	Tools:           []model.ToolDef{{Name: "fs_read", Description: "Read a file.", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}},
	MaxOutputTokens: 1024,
}

func generate(t *testing.T, m Model) (*model.Response, []string, error) {
	t.Helper()
	var deltas []string
	resp, err := m.Generate(context.Background(), testRequest, func(d string) error {
		deltas = append(deltas, d)
		return nil
	})
	if err != nil && strings.Contains(err.Error(), testSecret) {
		t.Fatalf("error names the secret: %v", err)
	}
	return resp, deltas, err
}

func wantError(t *testing.T, err error, code Code, delivery Delivery, retry RetryClass) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error %s, got %v", code, err)
	}
	if e.Code != code || e.Delivery != delivery || e.RetryClass != retry {
		t.Fatalf("want %s/%s/%q, got %s/%s/%q (%v)", code, delivery, retry, e.Code, e.Delivery, e.RetryClass, e)
	}
	return e
}

func TestConformanceTextOnly(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, stream(200, a.wire.text([]string{"Paid ", "on ", "time."}, true)))
			resp, deltas, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "Paid on time." || strings.Join(deltas, "|") != "Paid |on |time." || resp.FinishReason != model.FinishStop || len(resp.ToolCalls) != 0 {
				t.Fatalf("got %+v deltas %q", resp, deltas)
			}
			if !resp.UsageReported || *resp.Usage.InputTokens != 11 || *resp.Usage.OutputTokens != 7 || *resp.Usage.CacheReadTokens != 3 {
				t.Fatalf("usage: %+v", resp.Usage)
			}
			if a.costWire {
				// 0.0000123401 USD = 12.3401 micro-USD, rounded up once.
				if resp.Usage.CostMicroUSD == nil || *resp.Usage.CostMicroUSD != 13 {
					t.Fatalf("cost: %v", resp.Usage.CostMicroUSD)
				}
			} else if resp.Usage.CostMicroUSD != nil {
				t.Fatalf("cost must be unknown for %s", a.name)
			}
			header, value := "Authorization", "Bearer "+testSecret
			if a.authHeader != "" {
				header, value = a.authHeader, a.authValue
			}
			if got := p.header.Get(header); got != value {
				t.Fatalf("auth header %q", got)
			}
			body := p.lastBody(t)
			if !a.bodyless && (body["model"] != "test/model" || body["stream"] != true) {
				t.Fatalf("request body: %v", body)
			}
		})
	}
}

func TestConformanceOneToolCall(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, stream(200, a.wire.tools("", []call{{"call_1", "fs_read", `{"path":"evidence.md"}`}}, true)))
			resp, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason != model.FinishToolCalls || len(resp.ToolCalls) != 1 {
				t.Fatalf("got %+v", resp)
			}
			c := resp.ToolCalls[0]
			if c.ID != "call_1" || c.Name != "fs_read" || string(c.Arguments) != `{"path":"evidence.md"}` {
				t.Fatalf("call %+v (%s)", c, c.Arguments)
			}
		})
	}
}

// Parallel tool calls are handled: the engine accepts several calls in one
// turn, so every adapter returns them in order.
func TestConformanceParallelToolCallsHandled(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			calls := []call{{"call_1", "fs_read", `{"path":"a.md"}`}, {"call_2", "fs_list", `{"path":"."}`}}
			p := newPeer(t, stream(200, a.wire.tools("Looking.", calls, false)))
			resp, deltas, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ToolCalls) != 2 || resp.ToolCalls[1].ID != "call_2" || string(resp.ToolCalls[1].Arguments) != `{"path":"."}` || resp.Text != "Looking." || len(deltas) != 1 {
				t.Fatalf("got %+v", resp)
			}
		})
	}
}

func TestConformanceUsageAbsentIsUnknown(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, stream(200, a.wire.text([]string{"ok"}, false)))
			resp, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			if resp.UsageReported {
				t.Fatalf("usage must be unknown: %+v", resp.Usage)
			}
		})
	}
}

func TestConformanceStatusFailures(t *testing.T) {
	cases := []struct {
		status int
		retry  RetryClass
	}{
		{429, RetryRateLimited}, {502, RetryServiceUnavailable}, {503, RetryServiceUnavailable}, {504, RetryServiceUnavailable},
		{400, ""}, {401, ""}, {500, ""},
	}
	for _, a := range adapters() {
		for _, c := range cases {
			t.Run(string(a.name)+"/"+http.StatusText(c.status), func(t *testing.T) {
				p := newPeer(t, status(c.status))
				_, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
				e := wantError(t, err, CodeRejected, ResponseReceived, c.retry)
				if e.Status != c.status || !errors.Is(err, ErrRejected) {
					t.Fatalf("status %d: %v", e.Status, err)
				}
			})
		}
	}
}

func TestConformanceRedirectIsNeverFollowed(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			target := newPeer(t, stream(200, a.wire.text([]string{"stolen"}, true)))
			p := newPeer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				http.Redirect(w, r, target.srv.URL+"/?key="+testSecret, http.StatusTemporaryRedirect)
			})
			_, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			e := wantError(t, err, CodeRejected, ResponseReceived, "")
			if e.Status != http.StatusTemporaryRedirect || target.hits.Load() != 0 {
				t.Fatalf("redirect followed or misreported: %v, target hits %d", err, target.hits.Load())
			}
			if strings.Contains(err.Error(), target.srv.URL) {
				t.Fatalf("error names the redirect target: %v", err)
			}
		})
	}
}

func TestConformanceTruncatedStreamIsMalformed(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			full := a.wire.text([]string{"one ", "two ", "three"}, true)
			for _, cut := range []int{len(full) / 2, len(full) - 3} {
				p := newPeer(t, stream(200, full[:cut]))
				_, deltas, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
				e := wantError(t, err, CodeMalformed, ResponseReceived, "")
				if len(deltas) > 0 && !e.Escaped {
					t.Fatal("a failure after a delta must say content escaped")
				}
			}
		})
	}
}

func TestConformanceOversizedFrame(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			body := a.wire.text([]string{strings.Repeat("x", 4096)}, true)
			// The largest frame of the body fits at its exact size and fails
			// one byte below.
			largest := 0
			for _, f := range strings.Split(body, "\n\n") {
				n := 0
				for _, line := range strings.Split(f, "\n") {
					if v, ok := strings.CutPrefix(line, "data: "); ok {
						n += len(v)
					} else if v, ok := strings.CutPrefix(line, "event: "); ok {
						n += len(v)
					}
				}
				largest = max(largest, n)
			}
			p := newPeer(t, stream(200, body))
			if _, _, err := generate(t, a.build(NewClient(ClientOptions{Limits: Limits{MaxFrameBytes: largest}}), p.srv.URL)); err != nil {
				t.Fatalf("a frame at the bound must pass: %v", err)
			}
			_, _, err := generate(t, a.build(NewClient(ClientOptions{Limits: Limits{MaxFrameBytes: largest - 1}}), p.srv.URL))
			wantError(t, err, CodeMalformed, ResponseReceived, "")
		})
	}
}

func TestConformanceFrameCountAndResponseBounds(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			body := a.wire.text([]string{"a", "b"}, true)
			frames := strings.Count(body, "\n\n")
			p := newPeer(t, stream(200, body))
			if _, _, err := generate(t, a.build(NewClient(ClientOptions{Limits: Limits{MaxFrames: frames, MaxResponseBytes: int64(len(body))}}), p.srv.URL)); err != nil {
				t.Fatalf("at the bounds: %v", err)
			}
			_, _, err := generate(t, a.build(NewClient(ClientOptions{Limits: Limits{MaxFrames: frames - 1}}), p.srv.URL))
			wantError(t, err, CodeMalformed, ResponseReceived, "")
			_, _, err = generate(t, a.build(NewClient(ClientOptions{Limits: Limits{MaxResponseBytes: int64(len(body)) - 1}}), p.srv.URL))
			wantError(t, err, CodeMalformed, ResponseReceived, "")
		})
	}
}

func TestConformanceRequestBoundRefusesBeforeSending(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, stream(200, a.wire.text([]string{"a"}, true)))
			_, _, err := generate(t, a.build(NewClient(ClientOptions{Limits: Limits{MaxRequestBytes: 64}}), p.srv.URL))
			wantError(t, err, CodeContextTooLarge, NotSent, "")
			if p.hits.Load() != 0 {
				t.Fatal("an oversized request reached the peer")
			}
		})
	}
}

var hostileWant = map[string]Code{
	"invalid_json": CodeMalformed, "deep_nesting": CodeMalformed, "wide_container": CodeMalformed,
	"second_choice": CodeUnsupported, "in_stream_error": CodeRejected, "invalid_utf8": CodeMalformed,
	"tool_without_name": CodeMalformed, "tool_index_too_big": CodeMalformed, "negative_tokens": CodeMalformed,
	"audio": CodeUnsupported, "event_name_differs": CodeMalformed, "sequence_repeats": CodeMalformed,
	"unknown_event": CodeUnsupported, "hosted_tool": CodeUnsupported, "error_event": CodeRejected, "long_call_id": CodeMalformed,
}

func TestConformanceHostileFrames(t *testing.T) {
	for _, a := range adapters() {
		for name, frame := range a.wire.hostileFrames() {
			t.Run(string(a.name)+"/"+name, func(t *testing.T) {
				body := a.wire.text([]string{"a"}, true)
				i := strings.Index(body, "\n\n") + 2
				p := newPeer(t, stream(200, body[:i]+frame+body[i:]))
				_, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
				wantError(t, err, hostileWant[name], ResponseReceived, "")
			})
		}
	}
}

func TestConformanceRefusalIsUnsupported(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, stream(200, a.wire.contentFilter()))
			_, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			wantError(t, err, CodeUnsupported, ResponseReceived, "")
			if !errors.Is(err, ErrUnsupported) {
				t.Fatal("errors.Is(ErrUnsupported)")
			}
		})
	}
}

func TestConformanceNotAnEventStream(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"choices":[]}`))
			})
			_, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			wantError(t, err, CodeMalformed, ResponseReceived, "")
		})
	}
}

// A refused connection proves the request never left.
func TestConformanceConnectionRefusedIsNotSent(t *testing.T) {
	addr := refusingAddr(t)
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			_, _, err := generate(t, a.build(NewClient(ClientOptions{}), "http://"+addr+"/v1/chat/completions"))
			wantError(t, err, CodeTransport, NotSent, RetryNotSent)
		})
	}
}

// A connection that closes after the request was written may have
// delivered it.
func TestConformanceDropAfterWriteMayHaveBeenSent(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			})
			_, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			wantError(t, err, CodeTransport, MayHaveBeenSent, RetryTransportUncertain)
		})
	}
}

func TestConformanceEmitErrorStopsTheStream(t *testing.T) {
	sinkErr := errors.New("sink full")
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, stream(200, a.wire.text([]string{"a", "b", "c"}, true)))
			n := 0
			_, err := a.build(NewClient(ClientOptions{}), p.srv.URL).Generate(context.Background(), testRequest, func(string) error {
				n++
				return sinkErr
			})
			if n != 1 || !errors.Is(err, sinkErr) {
				t.Fatalf("emit calls %d, err %v", n, err)
			}
			wantError(t, err, CodeEventSink, ResponseReceived, "")
		})
	}
}

func TestConformanceCancelledCallReportsTheCause(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			p := newPeer(t, stream(200, a.wire.text([]string{"a", "b"}, true)))
			ctx, cancel := context.WithCancel(context.Background())
			_, err := a.build(NewClient(ClientOptions{}), p.srv.URL).Generate(ctx, testRequest, func(string) error {
				cancel()
				return nil
			})
			// The stream may finish from the buffer; if it does not, the
			// cause must be the cancellation.
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("want context.Canceled, got %v", err)
			}
		})
	}
}

// refusingAddr returns a loopback address that refuses connections for the
// rest of the test: a TCP socket bound to it that never listens. (A port
// released after a listener had it could be taken by another process's
// listener meanwhile.)
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
