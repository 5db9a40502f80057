package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/internal/httpx"
)

// scripted is a Streamable HTTP server whose answers a test writes by hand,
// recording every request that reached it.
type scripted struct {
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	verb, method, session, version, token, lastEventID string
	body                                               string
}

const scriptedToken = "tok-secret-123"

// newScripted serves handle behind a recorder and returns a connection to
// it carrying the credential header x-token. Initialize is answered with
// session "s-1" unless handle answers it.
func newScripted(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, msg envelope) bool) (*scripted, *httpConn, chan string) {
	t.Helper()
	s := &scripted{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		msg, _ := decodeMessage(body)
		method := ""
		if msg.Method != nil {
			method = *msg.Method
		}
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{r.Method, method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("X-Token"), r.Header.Get("Last-Event-Id"), string(body)})
		s.mu.Unlock()
		if handle(w, r, msg) {
			return
		}
		switch {
		case method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}}`)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusMethodNotAllowed)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(ts.Close)
	notes := make(chan string, 16)
	conn, err := dialHTTP(&Server{Name: "s", Transport: HTTP, URL: ts.URL + "/mcp"}, map[string]string{"x-token": scriptedToken}, true, func(method string, params json.RawMessage) {
		notes <- method + " " + string(params)
	}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.close() })
	return s, conn, notes
}

func (s *scripted) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// initialized runs initialize on conn and returns a session over it.
func initialized(t *testing.T, conn *httpConn) *session {
	t.Helper()
	s := newSession("s")
	s.conn = conn
	if err := s.initialize(context.Background(), "test", "1"); err != nil {
		t.Fatal(err)
	}
	return s
}

func eventStream(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, body)
}

func TestEventStreamWithCommentsMultiLineDataAndIDs(t *testing.T) {
	t.Parallel()
	_, conn, notes := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		if msg.Method == nil || *msg.Method != "tools/call" {
			return false
		}
		eventStream(w, ": keep-alive\r\n\r\n"+
			"event: message\r\nid: 7\r\n"+
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\r\n"+
			"data: \"params\":{\"progressToken\":1,\"progress\":1}}\r\n\r\n"+
			"retry: 10\n"+
			"data: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{\"other\":true}}\n\n"+
			"data: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\n"+
			"data:\"result\":{\"ok\":true}}\n\n")
		return true
	})
	sess := initialized(t, conn)
	raw, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	if err != nil || string(raw) != `{"ok":true}` {
		t.Fatalf("result %s, %v", raw, err)
	}
	if got := <-notes; got != "notifications/progress {\"progressToken\":1,\"progress\":1}" {
		t.Fatalf("note %q", got)
	}
}

func TestEventStreamEndingWithoutTheResponseIsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		if msg.Method == nil || *msg.Method != "tools/call" {
			return false
		}
		eventStream(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		return true
	})
	sess := initialized(t, conn)
	_, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	var ce *CallError
	if !errors.As(err, &ce) || ce.Delivery != string(outcome.MayHaveBeenSent) || !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("%v", err)
	}
}

func TestOversizedEventIsABound(t *testing.T) {
	t.Parallel()
	_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		if msg.Method == nil || *msg.Method != "tools/call" {
			return false
		}
		eventStream(w, "data: "+strings.Repeat("x", MaxFrameBytes/2)+"\ndata: "+strings.Repeat("y", MaxFrameBytes/2)+"\n\n")
		return true
	})
	sess := initialized(t, conn)
	_, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	if !errors.Is(err, ErrBound) {
		t.Fatalf("%v", err)
	}
}

func TestEndedStreamIsResumedWithTheLastEventID(t *testing.T) {
	t.Parallel()
	callID := make(chan string, 1)
	srv, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		switch {
		case msg.Method != nil && *msg.Method == "tools/call":
			callID <- string(msg.ID)
			eventStream(w, "id: ev-1\nretry: 5\ndata: \n\n")
			return true
		case r.Method == http.MethodGet:
			eventStream(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+<-callID+",\"result\":{\"resumed\":true}}\n\n")
			return true
		}
		return false
	})
	sess := initialized(t, conn)
	raw, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	if err != nil || string(raw) != `{"resumed":true}` {
		t.Fatalf("%s %v", raw, err)
	}
	var get *seenRequest
	for _, q := range srv.requests() {
		if q.verb == http.MethodGet {
			get = &q
		}
	}
	if get == nil || get.lastEventID != "ev-1" || get.session != "s-1" || get.token != scriptedToken || get.version != ProtocolVersion {
		t.Fatalf("resuming GET %+v", get)
	}
}

func TestServerRequestOnAnEventStreamIsAnswered(t *testing.T) {
	t.Parallel()
	answered := make(chan string, 1)
	_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		switch {
		case msg.Method != nil && *msg.Method == "tools/call":
			eventStream(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n")
			w.(http.Flusher).Flush()
			got := <-answered
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\"result\":{\"after\":"+got+"}}\n\n")
			return true
		case msg.Method == nil && msg.hasID():
			answered <- string(msg.Result)
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		return false
	})
	sess := initialized(t, conn)
	raw, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	if err != nil || string(raw) != `{"after":{}}` {
		t.Fatalf("%s %v", raw, err)
	}
}

func TestSessionNotFoundEndsTheConnection(t *testing.T) {
	t.Parallel()
	srv, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		if msg.Method != nil && *msg.Method == "tools/call" {
			http.Error(w, "unknown session", http.StatusNotFound)
			return true
		}
		return false
	})
	sess := initialized(t, conn)
	for range 2 {
		_, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
		var ce *CallError
		if !errors.As(err, &ce) || !errors.Is(err, ErrSessionEnded) || ce.Delivery != string(outcome.NotSent) {
			t.Fatalf("%v", err)
		}
	}
	conn.close()
	calls := 0
	for _, q := range srv.requests() {
		if q.method == "tools/call" {
			calls++
		}
		if q.verb == http.MethodDelete {
			t.Error("a DELETE was sent for a session the server already ended")
		}
	}
	if calls != 1 {
		t.Fatalf("%d tools/call reached the server after the session ended", calls)
	}
}

func TestDeleteCarriesSessionVersionAndCredentials(t *testing.T) {
	t.Parallel()
	srv, conn, _ := newScripted(t, func(http.ResponseWriter, *http.Request, envelope) bool { return false })
	initialized(t, conn)
	conn.close()
	reqs := srv.requests()
	last := reqs[len(reqs)-1]
	if last.verb != http.MethodDelete || last.session != "s-1" || last.version != ProtocolVersion || last.token != scriptedToken {
		t.Fatalf("closing request %+v", last)
	}
	for _, q := range reqs {
		if q.token != scriptedToken {
			t.Errorf("%s %s lacks the credential header", q.verb, q.method)
		}
	}
}

func TestStatusErrorsAreBoundedAndMasked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		status   int
		kind     error
		delivery outcome.Delivery
	}{
		{"ClientErrorRefusedTheRequest", http.StatusBadRequest, ErrProtocol, outcome.ResponseReceived},
		{"ServerErrorLeavesTheOutcomeUnknown", http.StatusBadGateway, ErrUnknownOutcome, outcome.MayHaveBeenSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
				if msg.Method == nil || *msg.Method != "tools/call" {
					return false
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, "you sent x-token: "+scriptedToken+"\x00\x01 "+strings.Repeat("pad ", 500))
				return true
			})
			sess := initialized(t, conn)
			_, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
			var ce *CallError
			if !errors.As(err, &ce) || !errors.Is(err, tc.kind) || ce.Delivery != string(tc.delivery) {
				t.Fatalf("%v", err)
			}
			msg := err.Error()
			if strings.Contains(msg, scriptedToken) || strings.ContainsAny(msg, "\x00\x01") || len(msg) > 600 {
				t.Fatalf("error text not bounded or not masked: %q", msg)
			}
		})
	}
}

func TestStatusSnippetDropsACutOffCredential(t *testing.T) {
	t.Parallel()
	g := &governedTransport{headers: map[string]string{"x-token": scriptedToken}}
	if got := g.mask("prefix " + scriptedToken[:6]); got != "prefix " {
		t.Fatalf("%q", got)
	}
}

func TestInitializeRefusedNamesTheLegacyTransport(t *testing.T) {
	t.Parallel()
	_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return true
	})
	s := newSession("s")
	s.conn = conn
	err := s.initialize(context.Background(), "test", "1")
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "HTTP+SSE") {
		t.Fatalf("%v", err)
	}
}

// A request whose event stream was opened has reached the server: a 404
// to the GET that resumes the stream ends the session, but cannot make
// the request unsent.
func TestSessionNotFoundOnResumeLeavesTheOutcomeUnknown(t *testing.T) {
	t.Parallel()
	_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		switch {
		case msg.Method != nil && *msg.Method == "tools/call":
			eventStream(w, "id: ev-1\nretry: 1\ndata: \n\n")
			return true
		case r.Method == http.MethodGet:
			http.Error(w, "unknown session", http.StatusNotFound)
			return true
		}
		return false
	})
	sess := initialized(t, conn)
	_, err := sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, ErrSessionEnded) || ce.Delivery != string(outcome.MayHaveBeenSent) {
		t.Fatalf("%v", err)
	}
	// The session is over: the next request is refused unsent.
	_, err = sess.request(context.Background(), "tools/call", json.RawMessage(`{}`))
	if !errors.As(err, &ce) || !errors.Is(err, ErrSessionEnded) || ce.Delivery != string(outcome.NotSent) {
		t.Fatalf("after the end: %v", err)
	}
}

// Response headers are the server's too: they are bounded like its bodies,
// not by net/http's default of megabytes.
func TestOversizedResponseHeadersAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		bytes int
		ok    bool
	}{
		{"WellUnderTheBound", 1024, true},
		{"PastTheBound", maxResponseHeaderBytes + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
				w.Header().Set("X-Filler", strings.Repeat("f", tc.bytes))
				return false
			})
			s := newSession("s")
			s.conn = conn
			if err := s.initialize(context.Background(), "test", "1"); (err == nil) != tc.ok {
				t.Fatalf("%d header bytes: %v", tc.bytes, err)
			}
		})
	}
}

func TestResponseStreamBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		body  string
		bound bool
	}{
		{"AtTheBound", "12345678", false},
		{"OnePastTheBound", "123456789", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := httpx.LimitBody(io.NopCloser(strings.NewReader(tc.body)), 8, errStreamBound)
			got, err := io.ReadAll(b)
			if errors.Is(err, ErrBound) != tc.bound || (!tc.bound && (err != nil || string(got) != tc.body)) {
				t.Fatalf("read %q, %v", got, err)
			}
		})
	}
}

func TestSessionIDBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		id   string
		ok   bool
	}{
		{"AtTheBound", strings.Repeat("s", MaxSessionIDBytes), true},
		{"OnePastTheBound", strings.Repeat("s", MaxSessionIDBytes+1), false},
		{"SpaceIsNotVisibleASCII", "s 1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
				if msg.Method == nil || *msg.Method != "initialize" {
					return false
				}
				w.Header().Set("Mcp-Session-Id", tc.id)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}}`)
				return true
			})
			s := newSession("s")
			s.conn = conn
			err := s.initialize(context.Background(), "test", "1")
			if (err == nil) != tc.ok || (tc.ok && conn.sessionID() != tc.id) || (!tc.ok && !errors.Is(err, ErrProtocol)) {
				t.Fatalf("session ID of %d bytes: %v", len(tc.id), err)
			}
		})
	}
}

// A batch answer (JSON or one event of a stream) is read message by
// message: notifications are delivered and our response is found among
// them; a batch without it is a protocol error.
func TestHTTPBatchAnswers(t *testing.T) {
	t.Parallel()
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2}}`
	for name, c := range map[string]struct {
		answer func(w http.ResponseWriter, id string)
		ok     bool
	}{
		"json": {func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[`+note+`,{"jsonrpc":"2.0","id":`+id+`,"result":{"ok":true}}]`)
		}, true},
		"event stream": {func(w http.ResponseWriter, id string) {
			eventStream(w, "data: ["+note+`,{"jsonrpc":"2.0","id":`+id+`,"result":{"ok":true}}]`+"\n\n")
		}, true},
		"json without our response": {func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[`+note+`]`)
		}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, conn, notes := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
				if msg.Method == nil || *msg.Method != "tools/call" {
					return false
				}
				c.answer(w, string(msg.ID))
				return true
			})
			s := initialized(t, conn)
			raw, err := s.request(context.Background(), "tools/call", map[string]any{"name": "x"})
			if !c.ok {
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("got %s, %v", raw, err)
				}
				return
			}
			if err != nil || string(raw) != `{"ok":true}` {
				t.Fatalf("got %s, %v", raw, err)
			}
			if n := <-notes; !strings.HasPrefix(n, "notifications/progress") {
				t.Fatalf("notification %q", n)
			}
		})
	}
}

// A scheme-and-token header masks the token when a server echoes it alone.
func TestStatusSnippetMasksABearerTokenAlone(t *testing.T) {
	t.Parallel()
	g := &governedTransport{headers: map[string]string{"authorization": "Bearer tok-secret-9"}}
	for _, in := range []string{"you sent tok-secret-9 and Bearer tok-secret-9", "cut: tok-sec"} {
		if out := g.mask(in); strings.Contains(out, "tok-sec") {
			t.Errorf("%q became %q", in, out)
		}
	}
}

// An event that is not a JSON-RPC message breaks the stream: the request
// fails at once with ErrProtocol, and the server may have acted on it.
func TestEventThatIsNotJSONRPCFailsTheRequest(t *testing.T) {
	t.Parallel()
	_, conn, _ := newScripted(t, func(w http.ResponseWriter, r *http.Request, msg envelope) bool {
		if msg.Method == nil || *msg.Method != "tools/call" {
			return false
		}
		// The stream then stays open: only the broken event can end the wait.
		eventStream(w, "data: not json\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return true
	})
	sess := initialized(t, conn)
	// A wait for anything but the broken event ends at this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sess.request(ctx, "tools/call", json.RawMessage(`{}`))
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, ErrProtocol) || ce.Delivery != string(outcome.MayHaveBeenSent) {
		t.Fatalf("want a protocol error, got %v", err)
	}
}
