package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/redact"
)

// pipePeer is a scripted stdio server on in-memory pipes: what it writes
// is the connection's stdout, what it reads the connection's stdin.
type pipePeer struct {
	t     *testing.T
	conn  *lineConn
	out   *io.PipeWriter // the server's stdout
	in    *bufio.Reader  // the server's stdin
	inEnd *io.PipeReader
	notes chan string
}

func newPipePeer(t *testing.T) *pipePeer {
	t.Helper()
	stdoutR, stdoutW := io.Pipe()
	stdinR, stdinW := io.Pipe()
	p := &pipePeer{t: t, out: stdoutW, in: bufio.NewReader(stdinR), inEnd: stdinR, notes: make(chan string, 16)}
	p.conn = newLineConn(stdoutR, stdinW, func(method string, params json.RawMessage) {
		p.notes <- method + " " + string(params)
	}, nil)
	t.Cleanup(func() {
		stdoutW.Close()
		stdinR.Close()
		<-p.conn.done
	})
	return p
}

// send writes one line to the client.
func (p *pipePeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.out, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads one line the client wrote.
func (p *pipePeer) recv() string {
	p.t.Helper()
	line, err := p.in.ReadString('\n')
	if err != nil {
		p.t.Fatal(err)
	}
	return strings.TrimSuffix(line, "\n")
}

type callOutcome struct {
	r       reply
	written bool
	err     error
}

// callAsync starts a call and returns where its outcome arrives.
func (p *pipePeer) callAsync(ctx context.Context, id int64) <-chan callOutcome {
	ch := make(chan callOutcome, 1)
	go func() {
		r, w, err := p.conn.call(ctx, id, "tools/call", json.RawMessage(`{"name":"x"}`))
		ch <- callOutcome{r, w, err}
	}()
	return ch
}

func TestStdioRequestIsOneFrame(t *testing.T) {
	t.Parallel()
	p := newPipePeer(t)
	done := p.callAsync(context.Background(), 3)
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`; got != want {
		t.Fatalf("frame %s, want %s", got, want)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"result":{"ok":true}}`)
	o := <-done
	if o.err != nil || string(o.r.result) != `{"ok":true}` || !o.written {
		t.Fatalf("%+v", o)
	}
}

func TestStdioServerPingIsAnswered(t *testing.T) {
	t.Parallel()
	p := newPipePeer(t)
	p.send(`{"jsonrpc":"2.0","id":"ping-1","method":"ping"}`)
	if got, want := p.recv(), `{"jsonrpc":"2.0","id":"ping-1","result":{}}`; got != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
}

func TestStdioUnknownServerRequestGetsMethodNotFound(t *testing.T) {
	t.Parallel()
	p := newPipePeer(t)
	p.send(`{"jsonrpc":"2.0","id":41,"method":"sampling/createMessage","params":{}}`)
	var ans struct {
		ID    json.RawMessage
		Error wireError
	}
	if err := json.Unmarshal([]byte(p.recv()), &ans); err != nil {
		t.Fatal(err)
	}
	if string(ans.ID) != "41" || ans.Error.Code != -32601 || !strings.Contains(ans.Error.Message, "sampling/createMessage") {
		t.Fatalf("answer %+v", ans)
	}
}

func TestStdioResponseIDsMatchAsJSONValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		id      string
		matches bool
	}{
		{"SameNumberMatches", `1`, true},
		{"EqualNumberMatches", `1.0`, true},
		{"StringOfTheNumberDoesNotMatch", `"1"`, false},
		{"UnknownIDIsIgnored", `99`, false},
		{"NullIDIsIgnored", `null`, false},
		{"FractionIsIgnored", `1.5`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPipePeer(t)
			done := p.callAsync(context.Background(), 1)
			p.recv()
			p.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"result":"decoy"}`)
			p.send(`{"jsonrpc":"2.0","id":1,"result":"real"}`)
			o := <-done
			want := `"real"`
			if tc.matches {
				want = `"decoy"`
			}
			if o.err != nil || string(o.r.result) != want {
				t.Fatalf("result %s (%v), want %s", o.r.result, o.err, want)
			}
		})
	}
}

func TestStdioNotificationsReachTheHandler(t *testing.T) {
	t.Parallel()
	p := newPipePeer(t)
	p.send(`{"jsonrpc":"2.0","unknown":"a well-formed message of no kind is dropped"}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`)
	if got := <-p.notes; got != `notifications/progress {"progressToken":1,"progress":0.5}` {
		t.Fatalf("note %q", got)
	}
}

func TestStdioLineThatIsNotJSONRPCFailsThePendingRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, line string }{
		{"NotJSON", `not json at all`},
		{"TooDeep", `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`},
		{"NotAnObject", `42`},
		{"BatchOfGarbage", `[{"jsonrpc":"2.0","method":"x"},nope]`},
		{"BatchMemberNotAnObject", `["x"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A wait for anything but the broken line ends at this deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p := newPipePeer(t)
			done := p.callAsync(ctx, 1)
			p.recv()
			p.send(tc.line)
			o := <-done
			if !errors.Is(o.err, ErrProtocol) || !o.written {
				t.Fatalf("pending request: %+v", o)
			}
			// The session is over: nothing more goes out.
			if _, written, err := p.conn.call(ctx, 2, "tools/call", nil); !errors.Is(err, ErrSessionEnded) || written {
				t.Fatalf("after the broken frame: written %v, %v", written, err)
			}
		})
	}
}

func TestStdioEndOfStdoutFailsThePendingRequest(t *testing.T) {
	t.Parallel()
	p := newPipePeer(t)
	done := p.callAsync(context.Background(), 1)
	p.recv()
	p.out.Close()
	o := <-done
	if !errors.Is(o.err, errStreamEnded) || !o.written {
		t.Fatalf("pending request: %+v", o)
	}
	// Nothing more can go out: the next request is refused unsent.
	_, written, err := p.conn.call(context.Background(), 2, "tools/call", nil)
	if !errors.Is(err, ErrSessionEnded) || written {
		t.Fatalf("after the end: written %v, %v", written, err)
	}
}

func TestStdioFullStdinHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	// A server that never reads its stdin: the pipe fills, and the write
	// must still end when the call's context does (its deadline or a
	// cancel: the same cut). The context ends once the write has begun
	// (its first byte is in the pipe), not after a fixed time: a timer
	// could run out before a loaded host has written anything, which is
	// another case (nothing written).
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinR.Close()
	stdoutR, stdoutW := io.Pipe()
	c := newLineConn(stdoutR, stdinW, nil, nil)
	defer func() { stdoutW.Close(); <-c.done; stdinW.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	begun := make(chan struct{})
	go func() {
		defer close(begun)
		// One byte out of the pipe leaves the rest of the megabyte
		// blocked on a full pipe.
		if _, err := stdinR.Read(make([]byte, 1)); err == nil {
			cancel()
		}
	}()
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	_, written, err := c.call(ctx, 1, "tools/call", big)
	<-begun
	if !errors.Is(err, context.Canceled) || !written {
		t.Fatalf("written %v, %v", written, err)
	}
	// Half a frame went out: the stream is unusable from now on.
	_, written, err = c.call(context.Background(), 2, "tools/call", nil)
	if !errors.Is(err, ErrSessionEnded) || written {
		t.Fatalf("after a cut frame: written %v, %v", written, err)
	}
}

func TestFrameBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		input string
		want  []string
		bound bool
	}{
		{"AtTheBound", "12345678\n", []string{"12345678"}, false},
		{"OnePastTheBound", "123456789\n", nil, true},
		{"CRLFTerminated", "1234567\r\n", []string{"1234567"}, false},
		{"EmptyLinesAreSkipped", "\n\r\nab\n\n", []string{"ab"}, false},
		{"UnterminatedLastLineIsDropped", "ab\ncd", []string{"ab"}, false},
		{"LongLineAfterAGoodOne", "ab\n" + strings.Repeat("z", 40) + "\n", []string{"ab"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrameReader(strings.NewReader(tc.input), 8, 16)
			var got []string
			for {
				frame, err := f.next()
				if err != nil {
					if errors.Is(err, ErrBound) != tc.bound || (!tc.bound && err != io.EOF) {
						t.Fatalf("error %v, want bound %v", err, tc.bound)
					}
					break
				}
				got = append(got, string(frame))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("frames %q, want %q", got, tc.want)
			}
		})
	}
}

// Progress is bounded per message, in total and in count, and a message-less
// notification says how far along the server is.
func TestProgressBounds(t *testing.T) {
	s := newSession("srv")
	s.progressToken, s.progressWake = 7, make(chan struct{}, 1)
	note := func(msg string) {
		b, _ := json.Marshal(map[string]any{"progressToken": 7, "progress": 1, "message": msg})
		s.notify("notifications/progress", b)
	}
	s.notify("notifications/progress", json.RawMessage(`{"progressToken":7,"progress":2,"total":5}`))
	s.notify("notifications/progress", json.RawMessage(`{"progressToken":"7","progress":3}`)) // a string token never matches
	s.notify("notifications/progress", json.RawMessage(`{"progressToken":8,"message":"other call"}`))
	note(strings.Repeat("é", MaxProgressMessageBytes)) // 2 bytes each: cut on a boundary
	for range 20 {
		note(strings.Repeat("x", MaxProgressMessageBytes+1))
	}
	if s.progressMsgs[0] != "progress 2/5" {
		t.Fatalf("message-less progress: %q", s.progressMsgs[0])
	}
	if m := s.progressMsgs[1]; len(m) != MaxProgressMessageBytes || !utf8.ValidString(m) {
		t.Fatalf("first long message: %d bytes, valid %v", len(m), utf8.ValidString(m))
	}
	total := 0
	for _, m := range s.progressMsgs {
		total += len(m)
	}
	if total != MaxProgressBytes {
		t.Fatalf("%d bytes of progress kept, want the %d bound", total, MaxProgressBytes)
	}
	for range MaxProgressMessages {
		note("x")
	}
	if s.progressCount != MaxProgressMessages {
		t.Fatalf("%d messages counted", s.progressCount)
	}
}

// A server that asks something (ping) while our request is still being
// written, and then writes more before it reads its stdin again: the
// answer must not hold the reader behind the request's write, or neither
// side ever moves. The answer is given up after its allowance instead.
func TestStdioServerRequestDuringOurWriteDoesNotStallTheReader(t *testing.T) {
	t.Parallel()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW := io.Pipe()
	c := newLineConn(stdoutR, stdinW, nil, nil)
	// The deadline only keeps a regression from hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	server := make(chan error, 1)
	go func() {
		in := bufio.NewReader(stdinR)
		if _, err := in.ReadByte(); err != nil { // the request's write is under way
			server <- err
			return
		}
		io.WriteString(stdoutW, `{"jsonrpc":"2.0","id":"p","method":"ping"}`+"\n")
		// Returns only once the reader has read it.
		io.WriteString(stdoutW, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`+"\n")
		if _, err := in.ReadString('\n'); err != nil {
			server <- err
			return
		}
		_, err := io.WriteString(stdoutW, `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`+"\n")
		server <- err
	}()
	r, _, err := c.call(ctx, 1, "tools/call", big)
	stdoutW.Close()
	stdinW.Close()
	stdinR.Close()
	<-c.done
	if serr := <-server; err != nil || serr != nil || string(r.result) != `{"ok":true}` {
		t.Fatalf("result %s, %v (server: %v)", r.result, err, serr)
	}
}

// A server may send a JSON-RPC batch (protocol 2025-03-26): its
// notifications are delivered and its response answers the call. Nested,
// empty and over-long batches are dropped.
func TestStdioBatchIsDispatchedMessageByMessage(t *testing.T) {
	t.Parallel()
	p := newPipePeer(t)
	out := p.callAsync(context.Background(), 1)
	p.recv()
	p.send(`[[{"jsonrpc":"2.0","id":1,"result":{"nested":true}}]]`)
	p.send(`[]`)
	p.send("[" + strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/message"},`, MaxBatch) + `{"jsonrpc":"2.0","id":1,"result":{"too":"long"}}]`)
	p.send(` [{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}},{"jsonrpc":"2.0","id":1,"result":{"ok":true}}]`)
	o := <-out
	if o.err != nil || string(o.r.result) != `{"ok":true}` {
		t.Fatalf("call: %s %v", o.r.result, o.err)
	}
	if n := <-p.notes; !strings.HasPrefix(n, "notifications/progress") {
		t.Fatalf("notification %q", n)
	}
}

// A server that closed its stdin ends the session: the request never left,
// and the session (see session.send) records it not_sent and ended.
func TestClosedStdinEndsTheSession(t *testing.T) {
	t.Parallel()
	p := newPipePeer(t)
	p.inEnd.Close()
	_, written, err := p.conn.call(context.Background(), 1, "tools/list", json.RawMessage(`{}`))
	if written || !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("written %v, err %v", written, err)
	}
}

// A progress message is masked before it is cut to its bound: a
// credential the cut would split leaves no piece in the message.
func TestProgressMessageIsMaskedBeforeItIsCut(t *testing.T) {
	const token = "Tk9-Qm4Lz7-Wp2Vx"
	var set redact.Set
	set.Add(token)
	s := newSession("srv")
	s.progressToken, s.progressWake, s.mask = 7, make(chan struct{}, 1), set.String
	b, _ := json.Marshal(map[string]any{"progressToken": 7, "progress": 1, "message": strings.Repeat("x", MaxProgressMessageBytes-6) + token})
	s.notify("notifications/progress", b)
	if len(s.progressMsgs) != 1 || strings.Contains(s.progressMsgs[0], token[:6]) || !strings.HasSuffix(s.progressMsgs[0], "[redac") {
		t.Fatalf("progress %q", s.progressMsgs)
	}
}
