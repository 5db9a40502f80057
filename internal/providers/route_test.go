package providers

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pabloagent/pablo/model"
)

func chatEntry(t *testing.T, name, endpoint string) RouteEntry {
	t.Helper()
	m, err := NewChat(NewClient(ClientOptions{}), ChatOptions{Provider: OpenAICompatible, Endpoint: endpoint, Model: name + "-id", Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return RouteEntry{Name: name, Provider: OpenAICompatible, Model: name + "-id", Generator: m}
}

func TestFallbackAfter503UsesTheSecondEntry(t *testing.T) {
	first := newPeer(t, status(503))
	second := newPeer(t, stream(200, chatWire{}.text([]string{"ok"}, true)))
	r, err := NewRoute(RouteOptions{Name: "main", Entries: []RouteEntry{chatEntry(t, "a", first.srv.URL), chatEntry(t, "b", second.srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	var begun, ended []Attempt
	hooks := AttemptHooks{
		Begin: func(_ context.Context, a *Attempt) error { begun = append(begun, *a); return nil },
		End:   func(_ context.Context, a *Attempt, _ *model.Response, _ error) { ended = append(ended, *a) },
	}
	state := &RouteState{}
	resp, attempts, err := r.Generate(context.Background(), state, hooks, testRequest, func(string) error { return nil })
	if err != nil || resp.Text != "ok" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if len(attempts) != 2 || len(begun) != 2 || len(ended) != 2 {
		t.Fatalf("attempts %d begun %d ended %d", len(attempts), len(begun), len(ended))
	}
	a0, a1 := attempts[0], attempts[1]
	if a0.SelectionReason != SelectInitial || !a0.Failed || a0.RetryClass != RetryServiceUnavailable || a0.Delivery != ResponseReceived {
		t.Fatalf("first attempt %+v", a0)
	}
	if a1.SelectionReason != SelectFallback || a1.Failed || a1.EntryIndex != 1 || a1.Number != 2 || a1.Operation != 1 {
		t.Fatalf("second attempt %+v", a1)
	}
	// Sticky: the next operation starts at the entry that served.
	_, attempts, err = r.Generate(context.Background(), state, hooks, testRequest, func(string) error { return nil })
	if err != nil || len(attempts) != 1 || attempts[0].EntryIndex != 1 || attempts[0].SelectionReason != SelectSticky || attempts[0].Operation != 2 {
		t.Fatalf("sticky: %+v %v", attempts, err)
	}
	if first.hits.Load() != 1 {
		t.Fatalf("an entry was revisited: %d", first.hits.Load())
	}
}

func TestNoFallbackAfterADeltaEscaped(t *testing.T) {
	// The first entry streams a delta and then breaks: the route must not
	// try the second entry.
	first := newPeer(t, stream(200, chatWire{}.text([]string{"partial"}, true)[:150]))
	second := newPeer(t, stream(200, chatWire{}.text([]string{"ok"}, true)))
	r, _ := NewRoute(RouteOptions{Name: "main", Entries: []RouteEntry{chatEntry(t, "a", first.srv.URL), chatEntry(t, "b", second.srv.URL)},
		Eligible: []RetryClass{RetryNotSent, RetryRateLimited, RetryServiceUnavailable, RetryTransportUncertain}, RetryUncertainDelivery: true})
	_, attempts, err := r.Generate(context.Background(), nil, AttemptHooks{}, testRequest, func(string) error { return nil })
	if err == nil || len(attempts) != 1 || second.hits.Load() != 0 {
		t.Fatalf("fell back after a delta: %v %+v", err, attempts)
	}
	var re *RouteError
	if !errors.As(err, &re) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("want RouteError over malformed, got %v", err)
	}
}

// A 503 that arrives after a delta escaped (an in-stream error) does not
// fall back either.
func TestNo503FallbackAfterTextDelta(t *testing.T) {
	body := chunk(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`) + chunk(`{"error":{"code":503,"message":"overloaded"}}`)
	first := newPeer(t, stream(200, body))
	second := newPeer(t, stream(200, chatWire{}.text([]string{"ok"}, true)))
	r, _ := NewRoute(RouteOptions{Name: "main", Entries: []RouteEntry{chatEntry(t, "a", first.srv.URL), chatEntry(t, "b", second.srv.URL)}})
	_, attempts, err := r.Generate(context.Background(), nil, AttemptHooks{}, testRequest, func(string) error { return nil })
	if err == nil || len(attempts) != 1 || second.hits.Load() != 0 {
		t.Fatalf("fell back: %v %+v", err, attempts)
	}
}

func TestFallbackEligibility(t *testing.T) {
	cases := []struct {
		name      string
		answer    func(http.ResponseWriter, *http.Request, int)
		eligible  []RetryClass
		uncertain bool
		fallback  bool
	}{
		{"429 default", status(429), nil, false, true},
		{"502 default", status(502), nil, false, true},
		{"500 never", status(500), nil, false, false},
		{"401 never", status(401), nil, false, false},
		{"503 with fallback disabled", status(503), []RetryClass{}, false, false},
		{"429 not listed", status(429), []RetryClass{RetryServiceUnavailable}, false, false},
		{"malformed never", stream(200, "data: {\n\n"), nil, false, false},
		{"dropped connection without opt-in", hijackClose, nil, false, false},
		{"dropped connection with only one opt-in", hijackClose, []RetryClass{RetryTransportUncertain}, false, false},
		{"dropped connection with both opt-ins", hijackClose, []RetryClass{RetryTransportUncertain}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			first := newPeer(t, c.answer)
			second := newPeer(t, stream(200, chatWire{}.text([]string{"ok"}, true)))
			r, _ := NewRoute(RouteOptions{Name: "r", Entries: []RouteEntry{chatEntry(t, "a", first.srv.URL), chatEntry(t, "b", second.srv.URL)},
				Eligible: c.eligible, RetryUncertainDelivery: c.uncertain})
			_, _, err := r.Generate(context.Background(), nil, AttemptHooks{}, testRequest, func(string) error { return nil })
			if got := second.hits.Load() == 1; got != c.fallback || (err == nil) != c.fallback {
				t.Fatalf("fallback %v, want %v (err %v)", got, c.fallback, err)
			}
		})
	}
}

func hijackClose(w http.ResponseWriter, _ *http.Request, _ int) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

func TestMaxAttemptsStopsTheRoute(t *testing.T) {
	a, b := newPeer(t, status(503)), newPeer(t, status(503))
	c := newPeer(t, stream(200, chatWire{}.text([]string{"ok"}, true)))
	r, _ := NewRoute(RouteOptions{Name: "r", MaxAttempts: 2, Entries: []RouteEntry{chatEntry(t, "a", a.srv.URL), chatEntry(t, "b", b.srv.URL), chatEntry(t, "c", c.srv.URL)}})
	_, attempts, err := r.Generate(context.Background(), nil, AttemptHooks{}, testRequest, func(string) error { return nil })
	if err == nil || len(attempts) != 2 || c.hits.Load() != 0 {
		t.Fatalf("attempts %d err %v", len(attempts), err)
	}
}

func TestBeginHookErrorStopsBeforeDispatch(t *testing.T) {
	p := newPeer(t, stream(200, chatWire{}.text([]string{"ok"}, true)))
	r, _ := NewRoute(RouteOptions{Name: "r", Entries: []RouteEntry{chatEntry(t, "a", p.srv.URL)}})
	limit := errors.New("model_calls ceiling")
	_, _, err := r.Generate(context.Background(), nil, AttemptHooks{Begin: func(context.Context, *Attempt) error { return limit }}, testRequest, func(string) error { return nil })
	if !errors.Is(err, limit) || p.hits.Load() != 0 {
		t.Fatalf("err %v hits %d", err, p.hits.Load())
	}
}

func TestAttemptDeadlineIsModelAttemptTimedOut(t *testing.T) {
	release := make(chan struct{})
	slow := newPeer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	second := newPeer(t, stream(200, chatWire{}.text([]string{"ok"}, true)))
	r, _ := NewRoute(RouteOptions{Name: "r", PerAttemptTimeout: 50 * time.Millisecond, Entries: []RouteEntry{chatEntry(t, "a", slow.srv.URL), chatEntry(t, "b", second.srv.URL)}})
	_, attempts, err := r.Generate(context.Background(), nil, AttemptHooks{}, testRequest, func(string) error { return nil })
	if !errors.Is(err, ErrAttemptTimedOut) || len(attempts) != 1 || attempts[0].Failure != CodeAttemptTimedOut || attempts[0].Delivery != MayHaveBeenSent {
		t.Fatalf("err %v attempts %+v", err, attempts)
	}
	if second.hits.Load() != 0 {
		t.Fatal("an uncertain delivery fell back without the opt-in")
	}
}

func TestNewRouteRejectsBadOptions(t *testing.T) {
	if _, err := NewRoute(RouteOptions{Name: "empty"}); err == nil {
		t.Fatal("an empty route must be rejected")
	}
	if _, err := NewRoute(RouteOptions{Name: "nil", Entries: []RouteEntry{{Name: "a"}}}); err == nil {
		t.Fatal("an entry without a model must be rejected")
	}
	r, _ := NewRoute(RouteOptions{Name: "r", MaxAttempts: 9, Entries: []RouteEntry{{Name: "a", Generator: &ChatModel{}}}})
	if r.Options().MaxAttempts != 1 {
		t.Fatal("max_attempts is never more than the entries")
	}
}

// stubModel emits its deltas, then fails with err.
type stubModel struct {
	deltas []string
	err    error
}

func (s stubModel) Generate(_ context.Context, _ *model.Request, emit func(string) error) (*model.Response, error) {
	for _, d := range s.deltas {
		if err := emit(d); err != nil {
			return nil, err
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return &model.Response{Text: "ok", FinishReason: model.FinishStop}, nil
}

// Even an eligible failure does not fall back once a delta escaped, even
// when the adapter forgot to say so.
func TestEligibleFailureAfterDeltaDoesNotFallBack(t *testing.T) {
	bad := stubModel{deltas: []string{"Hi"}, err: &Error{Code: CodeRejected, Delivery: ResponseReceived, RetryClass: RetryServiceUnavailable, Status: 503}}
	r, _ := NewRoute(RouteOptions{Name: "r", Entries: []RouteEntry{{Name: "a", Generator: bad}, {Name: "b", Generator: stubModel{}}}})
	_, attempts, err := r.Generate(context.Background(), nil, AttemptHooks{}, testRequest, func(string) error { return nil })
	if err == nil || len(attempts) != 1 {
		t.Fatalf("fell back after a delta: %v %+v", err, attempts)
	}
}
