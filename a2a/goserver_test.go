package a2a

import (
	"bytes"
	"context"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// goPeer is a real A2A 1.0 server on a2a-go's own a2asrv (its JSON-RPC
// binding, its default request handler, its in-memory task store and its
// logging interceptor), in the test's process on loopback. What its agent
// does is chosen by the request's first text part, as the @a2a-js/sdk
// fixture's: "echo:TEXT" answers TEXT, "slow" works until cancelled,
// "gated" works until the test opens gate, then answers "gated".
type goPeer struct {
	base string
	gate chan struct{}
	logs *syncBuffer
}

// syncBuffer is the server's log, written by its handlers' goroutines;
// more is closed (and replaced) at each write.
type syncBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.more)
	b.more = make(chan struct{})
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitLog waits until the server logged a line containing want.
func (p *goPeer) waitLog(t testing.TB, want string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		p.logs.mu.Lock()
		text, more := p.logs.buf.String(), p.logs.more
		p.logs.mu.Unlock()
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, want) {
				return l
			}
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("the a2a-go server never logged %q; its log:\n%s", want, text)
		}
	}
}

type goExecutor struct{ gate chan struct{} }

func (e goExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		text := ""
		for _, p := range ec.Message.Parts {
			if s := p.Text(); s != "" {
				text = s
				break
			}
		}
		if ec.StoredTask == nil && !yield(sdk.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, nil), nil) {
			return
		}
		answer := func(s string) {
			if yield(sdk.NewArtifactEvent(ec, sdk.NewTextPart(s)), nil) {
				yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCompleted, nil), nil)
			}
		}
		switch {
		case strings.HasPrefix(text, "echo:"):
			answer(strings.TrimPrefix(text, "echo:"))
		case text == "slow":
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
				yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateFailed, nil), nil)
			}
		case text == "gated":
			select {
			case <-ctx.Done():
			case <-e.gate:
				answer("gated")
			}
		default:
			yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateRejected, nil), nil)
		}
	}
}

func (goExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCanceled, nil), nil)
	}
}

// startGoPeer starts the a2a-go server and returns it once it listens.
func startGoPeer(t testing.TB) *goPeer {
	t.Helper()
	p := &goPeer{gate: make(chan struct{}), logs: &syncBuffer{more: make(chan struct{})}}
	logger := slog.New(slog.NewTextHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	handler := a2asrv.NewHandler(goExecutor{gate: p.gate},
		a2asrv.WithLogger(logger),
		a2asrv.WithCallInterceptors(a2asrv.NewLoggingInterceptor(nil)))
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	srv.Start()
	t.Cleanup(srv.Close)
	p.base = srv.URL
	card := &sdk.AgentCard{
		Name: "a2a-go fixture", Description: "a2a-go's own server", Version: "1.0.0",
		SupportedInterfaces: []*sdk.AgentInterface{sdk.NewAgentInterface(p.base+"/rpc", sdk.TransportProtocolJSONRPC)},
		Capabilities:        sdk.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              []sdk.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes its input", Tags: []string{"test"}}},
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(handler))
	return p
}

// startGoPeer03 starts a2a-go's A2A 0.3 server: the same agent behind
// its 0.3 compatibility layer (a2acompat/a2av0: the 0.3 JSON-RPC binding
// and a 0.3 card), which serves what deployed 0.3 agents serve.
func startGoPeer03(t testing.TB) *goPeer {
	t.Helper()
	p := &goPeer{gate: make(chan struct{}), logs: &syncBuffer{more: make(chan struct{})}}
	logger := slog.New(slog.NewTextHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	handler := a2asrv.NewHandler(goExecutor{gate: p.gate},
		a2asrv.WithLogger(logger),
		a2asrv.WithCallInterceptors(a2asrv.NewLoggingInterceptor(nil)))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.base = srv.URL
	card := &sdk.AgentCard{
		Name: "a2a-go 0.3 fixture", Description: "a2a-go's 0.3 compatibility server", Version: "1.0.0",
		SupportedInterfaces: []*sdk.AgentInterface{{URL: p.base + "/rpc", ProtocolBinding: sdk.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}},
		Capabilities:        sdk.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              []sdk.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes its input", Tags: []string{"test"}}},
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card)))
	mux.Handle("/rpc", a2av0.NewJSONRPCHandler(handler))
	return p
}
