package providers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// routerFixture is a loopback evaluation-model endpoint answering with
// status, content type and body, counting the requests it received.
type routerFixture struct {
	srv      *httptest.Server
	requests atomic.Int32
	last     atomic.Pointer[http.Request]
	body     atomic.Pointer[[]byte]
}

func newRouterFixture(t *testing.T, status int, contentType, answer string) *routerFixture {
	f := &routerFixture{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.requests.Add(1)
		f.last.Store(r)
		f.body.Store(&b)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func testRouter(t *testing.T, endpoint string) *Router {
	r, err := NewRouter(NewClient(ClientOptions{}), RouterOptions{Endpoint: endpoint, Secret: "sk-router", Instructions: "Classify.",
		Timeout: time.Minute, Categories: []RouterCategory{{Name: "simple", Description: "easy"}, {Name: "complex", Description: "hard"}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The request is the reference's shape: the task and instructions as
// state, one choice question with the categories as criteria, and the
// gateway's evaluation-model headers with the bearer credential.
func TestRouterRequestShapeAndUsage(t *testing.T) {
	f := newRouterFixture(t, 200, "application/json", `{"answers":{"complexity":{"type":"choice","choice":"complex"}},"usage":{"inputTokens":31,"outputTokens":2}}`)
	c, err := testRouter(t, f.srv.URL).Classify(context.Background(), "Plan the migration.", "Be brief.")
	if err != nil {
		t.Fatal(err)
	}
	if c.Category != "complex" || *c.InputTokens != 31 || *c.OutputTokens != 2 {
		t.Fatalf("classification %+v", c)
	}
	want := `{"state":{"task":"Plan the migration.","instructions":"Be brief."},"questions":{"complexity":{"type":"choice","instructions":"Classify.","criteria":{"complex":"hard","simple":"easy"}}}}`
	if got := string(*f.body.Load()); got != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
	h := f.last.Load().Header
	for k, v := range map[string]string{"Authorization": "Bearer sk-router", "Ai-Model-Id": "typesafe-ai/jev",
		"Ai-Evaluation-Model-Specification-Version": "4", "Ai-Gateway-Auth-Method": "api-key", "Content-Type": "application/json"} {
		if h.Get(k) != v {
			t.Fatalf("header %s = %q, want %q", k, h.Get(k), v)
		}
	}
}

// The body bound: exactly MaxRouterRequestBytes is sent, one byte more is
// context_overflow and never leaves.
func TestRouterBodyBoundary(t *testing.T) {
	f := newRouterFixture(t, 200, "application/json", `{"answers":{"complexity":{"type":"choice","choice":"simple"}}}`)
	r := testRouter(t, f.srv.URL)
	empty, _ := r.RequestBody("", "i")
	fill := MaxRouterRequestBytes - len(empty)
	at, _ := r.RequestBody(strings.Repeat("a", fill), "i")
	if len(at) != MaxRouterRequestBytes {
		t.Fatalf("body %d bytes, want %d", len(at), MaxRouterRequestBytes)
	}
	if _, err := r.Classify(context.Background(), strings.Repeat("a", fill), "i"); err != nil {
		t.Fatalf("a body at the bound is sent: %v", err)
	}
	_, err := r.Classify(context.Background(), strings.Repeat("a", fill+1), "i")
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != CodeContextTooLarge || pe.Delivery != NotSent {
		t.Fatalf("one byte past the bound: %v", err)
	}
	if f.requests.Load() != 1 {
		t.Fatalf("the fixture saw %d requests, want 1", f.requests.Load())
	}
}

// Every way an answer can fail is a typed *Error with its delivery.
func TestRouterFailures(t *testing.T) {
	for name, c := range map[string]struct {
		status      int
		contentType string
		answer      string
		code        Code
		choice      bool
	}{
		"unknown choice":   {200, "application/json", `{"answers":{"complexity":{"type":"choice","choice":"medium"}}}`, CodeMalformed, true},
		"no answer":        {200, "application/json", `{"answers":{}}`, CodeMalformed, false},
		"not a choice":     {200, "application/json", `{"answers":{"complexity":{"type":"score","choice":"simple"}}}`, CodeMalformed, false},
		"not JSON":         {200, "application/json", `{"answers":`, CodeMalformed, false},
		"not JSON content": {200, "text/plain", `{}`, CodeMalformed, false},
		"server error":     {500, "application/json", `{"error":"boom"}`, CodeRejected, false},
		"rate limited":     {429, "application/json", `{}`, CodeRejected, false},
	} {
		t.Run(name, func(t *testing.T) {
			f := newRouterFixture(t, c.status, c.contentType, c.answer)
			_, err := testRouter(t, f.srv.URL).Classify(context.Background(), "task", "")
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != c.code || pe.Delivery != ResponseReceived {
				t.Fatalf("err %v, want %s", err, c.code)
			}
			if errors.Is(err, ErrRouterChoice) != c.choice {
				t.Fatalf("errors.Is(ErrRouterChoice) = %v", !c.choice)
			}
			// A successful answer is never echoed; an error answer's own
			// message is what the reason quotes (masked and bounded).
			if strings.Contains(err.Error(), "medium") {
				t.Fatalf("the error echoes the answer: %v", err)
			}
			if c.status == 500 && !strings.Contains(err.Error(), `"boom"`) {
				t.Fatalf("the error does not say what the router said: %v", err)
			}
		})
	}
}

// A router that does not answer within its timeout is
// model_attempt_timed_out; the caller's own cancellation stays a transport
// failure with its context cause.
func TestRouterTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	r, _ := NewRouter(NewClient(ClientOptions{}), RouterOptions{Endpoint: srv.URL, Instructions: "i", Timeout: 20 * time.Millisecond,
		Categories: []RouterCategory{{Name: "a"}, {Name: "b"}}})
	_, err := r.Classify(context.Background(), "task", "")
	if !errors.Is(err, ErrAttemptTimedOut) || !errors.Is(err, ErrRouterTimedOut) {
		t.Fatalf("err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Classify(ctx, "task", ""); !errors.Is(err, ErrTransport) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestNewRouterRejectsBadOptions(t *testing.T) {
	c := NewClient(ClientOptions{})
	if _, err := NewRouter(c, RouterOptions{Timeout: time.Second, Categories: []RouterCategory{{Name: "a"}}}); err == nil {
		t.Fatal("one category is refused")
	}
	if _, err := NewRouter(c, RouterOptions{Categories: []RouterCategory{{Name: "a"}, {Name: "b"}}}); err == nil {
		t.Fatal("no timeout is refused")
	}
}

// FuzzParseRouterAnswer: any answer either names one of the categories or
// is a typed malformed_stream error; it never panics.
func FuzzParseRouterAnswer(f *testing.F) {
	f.Add([]byte(`{"answers":{"complexity":{"type":"choice","choice":"simple"}},"usage":{"inputTokens":1,"outputTokens":2}}`))
	f.Add([]byte(`{"answers":{"complexity":{"choice":"other"}}}`))
	f.Add([]byte(`{"answers":null,"usage":{"inputTokens":-1}}`))
	cats := []string{"complex", "simple"}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseRouterAnswer(raw, cats)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != CodeMalformed {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if c.Category != "simple" && c.Category != "complex" {
			t.Fatalf("chose %q", c.Category)
		}
		if !json.Valid(raw) {
			t.Fatal("accepted invalid JSON")
		}
	})
}

// A router's choice starts the first operation at the chosen entry with
// selection_reason "complexity"; fallback goes on from there and later
// operations are sticky.
func TestRouteStartsAtTheSelectedEntry(t *testing.T) {
	a := newPeer(t, stream(200, chatWire{}.text([]string{"a"}, true)))
	b := newPeer(t, status(503))
	c := newPeer(t, stream(200, chatWire{}.text([]string{"c"}, true)))
	r, err := NewRoute(RouteOptions{Name: "main", Entries: []RouteEntry{chatEntry(t, "a", a.srv.URL), chatEntry(t, "b", b.srv.URL), chatEntry(t, "c", c.srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	state := &RouteState{}
	state.Select(1, SelectComplexity)
	resp, attempts, err := r.Generate(context.Background(), state, AttemptHooks{}, testRequest, func(string) error { return nil })
	if err != nil || resp.Text != "c" || len(attempts) != 2 {
		t.Fatalf("resp %+v attempts %+v err %v", resp, attempts, err)
	}
	if attempts[0].EntryIndex != 1 || attempts[0].SelectionReason != SelectComplexity || attempts[1].SelectionReason != SelectFallback {
		t.Fatalf("attempts %+v", attempts)
	}
	_, attempts, _ = r.Generate(context.Background(), state, AttemptHooks{}, testRequest, func(string) error { return nil })
	if attempts[0].EntryIndex != 2 || attempts[0].SelectionReason != SelectSticky {
		t.Fatalf("second operation %+v", attempts)
	}
	if a.hits.Load() != 0 {
		t.Fatal("the entry before the choice was tried")
	}
}

// BenchmarkRouterClassify is one classification against a loopback
// endpoint: encoding the request, the HTTP round trip and the answer's
// parse (the start cost a router adds to a task).
func BenchmarkRouterClassify(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"answers":{"complexity":{"type":"choice","choice":"complex"}},"usage":{"inputTokens":40,"outputTokens":1}}`)
	}))
	defer srv.Close()
	r, err := NewRouter(NewClient(ClientOptions{}), RouterOptions{Endpoint: srv.URL, Secret: "k", Instructions: "Classify.", Timeout: time.Minute,
		Categories: []RouterCategory{{Name: "simple", Description: "easy"}, {Name: "complex", Description: "hard"}}})
	if err != nil {
		b.Fatal(err)
	}
	task := strings.Repeat("Plan the migration of the invoices table. ", 50)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Classify(context.Background(), task, "Answer from evidence."); err != nil {
			b.Fatal(err)
		}
	}
}
