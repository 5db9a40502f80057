// Package providertest is a fault-injecting model provider on the loopback
// interface: an HTTP server that speaks the Chat Completions or the Open
// Responses wire and, per [Quirk], misbehaves the way real models and
// servers do (IDs missing or reused, arguments split anywhere, usage in
// odd places, a stream without its [DONE], keep-alive comments, CRLF,
// error events, statuses with Retry-After, a body that never ends).
//
// The corpus is what the conformance test of internal/providers runs every
// HTTP adapter through, and what the reference CLI's acceptance tests point
// a deployment at. A quirk is a switch: the server answers the first
// Options.Faults requests with it and the rest as a well-behaved server
// does, so a test can show a retry or a recovery.
package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
)

// Wire is the protocol the server speaks.
type Wire int

// The wires.
const (
	// Chat is OpenAI Chat Completions streamed as data-only SSE chunks.
	Chat Wire = iota
	// Responses is the Open Responses event stream (event names equal to
	// the JSON type, strictly increasing sequence numbers).
	Responses
	// Anthropic is the Anthropic Messages event stream.
	Anthropic
	// Gemini is the Gemini API's streamGenerateContent (alt=sse).
	Gemini
)

// Path is the request path the wire is served on.
func (w Wire) Path() string {
	switch w {
	case Responses:
		return "/v1/responses"
	case Anthropic:
		return "/v1/messages"
	case Gemini:
		return "/v1beta/models/gemini-fixture:streamGenerateContent"
	}
	return "/v1/chat/completions"
}

// Quirk names one behaviour of a real model or server.
type Quirk string

// The quirks. None is a well-behaved server.
const (
	None Quirk = ""

	// Tool-call IDs.
	EmptyCallID             Quirk = "empty_call_id"
	MissingCallID           Quirk = "missing_call_id"
	CallIDReusedAcrossTurns Quirk = "call_id_reused_across_turns"
	CallIDReusedInResponse  Quirk = "call_id_reused_in_response"

	// How arguments arrive.
	ArgsOneCharAtATime  Quirk = "args_one_char_at_a_time"
	ArgsOneChunk        Quirk = "args_one_chunk"
	ArgsSplitUTF8       Quirk = "args_split_inside_utf8"
	ParallelInterleaved Quirk = "parallel_calls_interleaved"

	// Reasoning deltas beside the text.
	ReasoningDeltas Quirk = "reasoning_deltas"

	// Where usage is.
	UsageEveryChunk Quirk = "usage_every_chunk"
	UsageAbsent     Quirk = "usage_absent"

	// How a stream ends.
	LengthHalfToolCall  Quirk = "length_with_half_tool_call"
	ContentFilter       Quirk = "content_filter"
	ErrorEventMidStream Quirk = "error_event_mid_stream"
	OverloadedEvent     Quirk = "overloaded_event_before_output"
	NoDone              Quirk = "no_done_after_finish"
	KeepAliveComments   Quirk = "keep_alive_comments"
	CRLF                Quirk = "crlf_line_endings"
	JSONErrorBody200    Quirk = "json_error_body_with_200"
	NeverEnds           Quirk = "body_never_ends"

	// Statuses.
	RateLimited        Quirk = "rate_limited_429"
	ServiceUnavailable Quirk = "service_unavailable_503"
	Overloaded529      Quirk = "overloaded_529"
	ModelNotFound      Quirk = "model_not_found_400"
	Unauthorized       Quirk = "unauthorized_401"
)

// Quirks returns every quirk but None, in a stable order.
func Quirks() []Quirk {
	return []Quirk{
		EmptyCallID, MissingCallID, CallIDReusedAcrossTurns, CallIDReusedInResponse,
		ArgsOneCharAtATime, ArgsOneChunk, ArgsSplitUTF8, ParallelInterleaved,
		ReasoningDeltas, UsageEveryChunk, UsageAbsent,
		LengthHalfToolCall, ContentFilter, ErrorEventMidStream, OverloadedEvent, NoDone,
		KeepAliveComments, CRLF, JSONErrorBody200, NeverEnds,
		RateLimited, ServiceUnavailable, Overloaded529, ModelNotFound, Unauthorized,
	}
}

// The provider's words in the error quirks, so a test can look for them in
// a reason.
const (
	MessageRateLimited   = "Rate limit reached for requests"
	MessageUnavailable   = "The server is temporarily unavailable"
	MessageOverloaded    = "Overloaded"
	MessageModelNotFound = "model 'llama9' not found"
	MessageUnauthorized  = "Incorrect API key provided"
	MessageMidStream     = "upstream connection reset mid-generation"
	MessageJSONError     = "the backend failed to load the model"
)

// Call is one scripted tool call.
type Call struct {
	ID   string
	Name string
	// Args is the arguments' JSON text.
	Args string
}

// Turn is one scripted answer: text, tool calls, or both.
type Turn struct {
	Text  string
	Calls []Call
}

// Options configure a [Server].
type Options struct {
	Wire  Wire
	Quirk Quirk
	// Faults is how many requests, from the first, are answered with the
	// quirk; zero means every request.
	Faults int
	// Turns are the answers in order; the n-th request that is not a
	// fault gets the next one, and the last repeats. Empty answers one
	// text turn.
	Turns []Turn
	// Reasoning starts every answer with a reasoning item whose opaque
	// state names its turn ("enc-turn-N" as a Responses item's
	// encrypted_content, "sig-turn-N" as an Anthropic thinking block's
	// signature, [GeminiSignature] as a Gemini function call's
	// thoughtSignature), so a test can find it in the next request's body.
	Reasoning bool
	// RetryAfter is the Retry-After header of RateLimited, Overloaded529
	// and ServiceUnavailable answers ("1" when empty; "-" sends none).
	RetryAfter string
}

// Server is a running fault-injecting provider. Close it when done.
type Server struct {
	opts Options
	srv  *httptest.Server
	done chan struct{}

	mu     sync.Mutex
	hits   int
	turn   int
	bodies [][]byte
	header http.Header
}

// New starts a Server on 127.0.0.1.
func New(opts Options) *Server {
	if len(opts.Turns) == 0 {
		opts.Turns = []Turn{{Text: "Paid on time."}}
	}
	s := &Server{opts: opts, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close ends every open answer (a NeverEnds body too) and stops the server.
func (s *Server) Close() {
	close(s.done)
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (s *Server) URL() string { return s.srv.URL }

// Endpoint is the complete POST URL of the server's wire.
func (s *Server) Endpoint() string { return s.srv.URL + s.opts.Wire.Path() }

// Requests is how many requests arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// Bodies returns the request bodies in order of arrival.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Header is the last request's header.
func (s *Server) Header() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header.Clone()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.hits++
	n := s.hits
	s.bodies = append(s.bodies, body)
	s.header = r.Header.Clone()
	q := None
	if s.opts.Faults == 0 || n <= s.opts.Faults {
		q = s.opts.Quirk
	}
	turnNo := s.turn
	t := s.opts.Turns[min(s.turn, len(s.opts.Turns)-1)]
	if !isStatus(q) && q != OverloadedEvent && q != JSONErrorBody200 {
		s.turn++
	}
	s.mu.Unlock()
	if isStatus(q) {
		s.status(w, q)
		return
	}
	if q == JSONErrorBody200 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"error":{"message":"`+MessageJSONError+`","type":"server_error","code":500}}`)
		return
	}
	var frames []string
	switch s.opts.Wire {
	case Responses:
		frames = responsesFrames(t, turnNo+1, q, s.opts.Reasoning)
	case Anthropic:
		frames = anthropicFrames(t, turnNo+1, q, s.opts.Reasoning)
	case Gemini:
		frames = geminiFrames(t, turnNo+1, q, s.opts.Reasoning)
	default:
		frames = chatFrames(t, turnNo+1, q)
	}
	s.write(w, r, frames, q)
}

func isStatus(q Quirk) bool {
	switch q {
	case RateLimited, ServiceUnavailable, Overloaded529, ModelNotFound, Unauthorized:
		return true
	}
	return false
}

// status answers an error status with the JSON body providers send.
func (s *Server) status(w http.ResponseWriter, q Quirk) {
	code, typ, msg := 0, "", ""
	switch q {
	case RateLimited:
		code, typ, msg = http.StatusTooManyRequests, "rate_limit_error", MessageRateLimited
	case ServiceUnavailable:
		code, typ, msg = http.StatusServiceUnavailable, "server_error", MessageUnavailable
	case Overloaded529:
		code, typ, msg = 529, "overloaded_error", MessageOverloaded
	case ModelNotFound:
		code, typ, msg = http.StatusBadRequest, "invalid_request_error", MessageModelNotFound
	case Unauthorized:
		code, typ, msg = http.StatusUnauthorized, "authentication_error", MessageUnauthorized
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == 529 {
		switch ra := s.opts.RetryAfter; ra {
		case "":
			w.Header().Set("Retry-After", "1")
		case "-":
		default:
			w.Header().Set("Retry-After", ra)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	prefix := ""
	switch s.opts.Wire {
	case Anthropic:
		// The Messages API's error document: {"type":"error","error":{...}}.
		prefix = `"type":"error",`
	case Gemini:
		// Google's error document carries the canonical status.
		status := map[int]string{429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 529: "UNAVAILABLE", 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED"}[code]
		io.WriteString(w, `{"error":{"code":`+strconv.Itoa(code)+`,"message":`+strconv.Quote(msg)+`,"status":"`+status+`"}}`)
		return
	}
	io.WriteString(w, `{`+prefix+`"error":{"message":`+strconv.Quote(msg)+`,"type":"`+typ+`"}}`)
}

// write sends frames as an event stream, applying the quirks that live
// below the frames: line endings, comments, where writes split, an end
// that never comes.
func (s *Server) write(w http.ResponseWriter, r *http.Request, frames []string, q Quirk) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	for i, f := range frames {
		if q == KeepAliveComments {
			io.WriteString(w, ": keep-alive\n\n: OPENROUTER PROCESSING\n\n")
		}
		if q == CRLF {
			f = crlf(f)
		}
		if q == ArgsSplitUTF8 {
			// Each write ends inside a multi-byte character where one
			// is, so the reader sees the character in two reads.
			if cut := splitPoint(f); cut > 0 {
				io.WriteString(w, f[:cut])
				flush()
				f = f[cut:]
			}
		}
		io.WriteString(w, f)
		flush()
		if q == NeverEnds && i == 0 {
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			return
		}
	}
}

// splitPoint is an index inside the first multi-byte UTF-8 sequence of f,
// or 0 when f has none.
func splitPoint(f string) int {
	for i := 0; i < len(f); i++ {
		if f[i] >= 0xC0 {
			return i + 1
		}
	}
	return 0
}

func crlf(f string) string {
	out := make([]byte, 0, len(f)+8)
	for i := 0; i < len(f); i++ {
		if f[i] == '\n' {
			out = append(out, '\r')
		}
		out = append(out, f[i])
	}
	return string(out)
}
