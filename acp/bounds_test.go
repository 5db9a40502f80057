package acp_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/event"
)

// The first delta of a model operation goes out at once; later text
// waits for 16 ms (on the injected clock) or 4 KiB, whichever first, and
// the frame's metadata names the native seq range it covers.
func TestTextCoalescesForSixteenMillisecondsOrFourKiB(t *testing.T) {
	t.Parallel()
	feed := &feedModel{deltas: make(chan string)}
	clock := newFakeClock()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`, runtime: func(o *pablo.RuntimeOptions) { o.Model = feed }})
	p := serve(t, fx.sessions, acp.Options{Clock: clock})
	p.initialize(acp.ExtV2)
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", textPrompt(sid, "talk"))
	chunk := func() (string, uint64, uint64) {
		t.Helper()
		f, _ := p.next()
		u := f.update()
		if u["sessionUpdate"] != "agent_message_chunk" {
			t.Fatalf("not a chunk: %s", f.raw)
		}
		var meta struct {
			Meta struct {
				V2 struct {
					SeqStart uint64 `json:"seq_start"`
					SeqEnd   uint64 `json:"seq_end"`
				} `json:"pablo/v2"`
			} `json:"_meta"`
		}
		jsonUnmarshal(t, f.Params, &meta)
		return u["content"].(map[string]any)["text"].(string), meta.Meta.V2.SeqStart, meta.Meta.V2.SeqEnd
	}

	feed.deltas <- "a"
	if text, s, e := chunk(); text != "a" || s != e {
		t.Fatalf("first delta: %q %d..%d", text, s, e)
	}
	feed.deltas <- "b"
	clock.WaitPending(acp.DefaultCoalesceWindow, 1)
	clock.Advance(acp.DefaultCoalesceWindow - 1)
	if clock.Pending(acp.DefaultCoalesceWindow) != 1 {
		t.Fatal("the window closed before 16 ms")
	}
	clock.Advance(1)
	if text, s, e := chunk(); text != "b" || s != e {
		t.Fatalf("after 16 ms: %q %d..%d", text, s, e)
	}

	// 4,095 bytes wait; the byte that makes 4 KiB sends them all, in one
	// frame covering the three deltas.
	feed.deltas <- "c"
	feed.deltas <- strings.Repeat("x", acp.DefaultCoalesceBytes-2)
	feed.deltas <- "y"
	text, s, e := chunk()
	if text != "c"+strings.Repeat("x", acp.DefaultCoalesceBytes-2)+"y" || e-s != 2 {
		t.Fatalf("at 4 KiB: %d bytes, seq %d..%d", len(text), s, e)
	}
	feed.deltas <- ""
	if _, answer := p.until(3); stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
}

// A client that stops reading: the stalled write is detected at 30 s on
// the injected clock, the connection closes and the running task is
// cancelled and joined before Serve returns.
func TestAStalledWriteClosesTheConnectionAndCancelsTheTask(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var mu sync.Mutex
	var outcomes []string
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["x"],"tool_calls":[{"name":"test.wait","arguments":{}}]}]}`,
		runtime: func(o *pablo.RuntimeOptions) {
			o.Sink = func(ev event.Event) error {
				if ev.Type == event.RunFinished {
					mu.Lock()
					outcomes = append(outcomes, string(ev.Outcome.Status))
					mu.Unlock()
				}
				return nil
			}
		}})
	p := serve(t, fx.sessions, acp.Options{Clock: clock})
	p.initialize()
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", textPrompt(sid, "wait"))
	// The client reads nothing more: the first update's write blocks.
	<-fx.tools.started
	clock.WaitPending(acp.DefaultWriteTimeout, 1)
	clock.Advance(acp.DefaultWriteTimeout - 1)
	if clock.Pending(acp.DefaultWriteTimeout) != 1 {
		t.Fatal("the stall fired early")
	}
	clock.Advance(1)
	err := <-p.served
	p.served <- err
	if !errors.Is(err, acp.ErrWriteStalled) {
		t.Fatalf("Serve: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != 1 || outcomes[0] != "cancelled" {
		t.Fatalf("outcomes %v", outcomes)
	}
}

// 128 messages per session are accepted, one more closes the connection;
// another session's count is its own, and messages that name no session
// have a budget of their own (MaxSessionless, 4,096 by default: an editor
// that opens and lists threads all day is not cut off after 128).
func TestTheMessageBoundIsPerSession(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`})
	t.Run("session", func(t *testing.T) {
		t.Parallel()
		p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
		p.initialize()
		a := p.newSession(2, fx.ws) // a's first message
		b := p.newSession(3, fx.ws)
		for i := 1; i < acp.DefaultMaxMessages; i++ {
			p.notify("session/cancel", map[string]any{"sessionId": a})
			p.notify("session/cancel", map[string]any{"sessionId": b})
		}
		// Both sessions are at the bound and the connection is alive.
		if f := p.call(4, "x/ping", map[string]any{}); f.Error == nil || f.Error.Code != -32601 {
			t.Fatalf("alive: %s", f.raw)
		}
		p.notify("session/cancel", map[string]any{"sessionId": a})
		p.drain()
		err := <-p.served
		p.served <- err
		if !errors.Is(err, acp.ErrMessageLimit) || !strings.Contains(err.Error(), a) {
			t.Fatalf("Serve: %v", err)
		}
	})
	t.Run("no session", func(t *testing.T) {
		t.Parallel()
		if acp.DefaultMaxSessionless <= acp.DefaultMaxMessages {
			t.Fatalf("the connection's budget (%d) is below a session's (%d)", acp.DefaultMaxSessionless, acp.DefaultMaxMessages)
		}
		const bound = 200 // past a session's 128: the budgets are apart
		p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock(), MaxSessionless: bound})
		p.initialize() // the first
		for i := 1; i < bound; i++ {
			if f := p.call(10+i, "x/ping", map[string]any{}); f.Error == nil {
				t.Fatalf("ping %d: %s", i, f.raw)
			}
		}
		p.notify("session/cancel", map[string]any{"sessionId": "nope"})
		p.drain()
		err := <-p.served
		p.served <- err
		if !errors.Is(err, acp.ErrMessageLimit) {
			t.Fatalf("Serve: %v", err)
		}
	})
}

// A storm of 1,000 cancels (session/cancel and $/cancel_request, for the
// running prompt, an idle session and unknown ones) answers the prompt
// cancelled exactly once, and the connection stays usable.
func TestACancelStormAnswersOnce(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["x"],"tool_calls":[{"name":"test.wait","arguments":{}}]},{"text":["after"]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock(), MaxMessages: 2000})
	p.initialize()
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", textPrompt(sid, "wait"))
	<-fx.tools.started
	var storm sync.WaitGroup
	storm.Add(1)
	go func() {
		defer storm.Done()
		for i := 0; i < 1000; i++ {
			var line string
			switch i % 4 {
			case 0:
				line = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`
			case 1:
				line = `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}`
			case 2:
				line = `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"` + strconv.Itoa(i) + `"}}`
			default:
				line = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"other-` + strconv.Itoa(i) + `"}}`
			}
			if _, err := p.in.Write([]byte(line + "\n")); err != nil {
				return
			}
		}
	}()
	_, answer := p.until(3)
	if stopReasonOf(t, answer) != "cancelled" {
		t.Fatalf("answer %s", answer.raw)
	}
	storm.Wait()
	if f := p.call(5, "x/ping", map[string]any{}); f.Error == nil || f.Error.Code != -32601 {
		t.Fatalf("after the storm: %s", f.raw)
	}
	if err := p.end(); err != nil {
		t.Fatal(err)
	}
	for _, f := range p.drain() {
		if string(f.ID) == "3" {
			t.Fatalf("a second answer: %s", f.raw)
		}
	}
}
