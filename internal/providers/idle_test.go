package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/model"
)

// fakeTimer is an idle timer the test fires by hand: no sleep, no clock.
type fakeTimer struct {
	mu     sync.Mutex
	f      func()
	resets int
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resets++
	return true
}
func (t *fakeTimer) Stop() bool { return true }
func (t *fakeTimer) fire()      { t.f() }

// TestStalledStreamEndsAsAttemptTimedOut: a provider that stops sending
// ends the call at its stream idle timeout as model_attempt_timed_out,
// with the delivery the call had reached: after a text delta escaped, the
// response was received; before the response headers, it may have been
// sent. Every read that brings bytes re-arms the timer.
func TestStalledStreamEndsAsAttemptTimedOut(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		started  bool
		delivery Delivery
		escaped  bool
	}{
		{"after a delta", true, ResponseReceived, true},
		{"before the response", false, MayHaveBeenSent, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			entered := make(chan struct{})
			p := newPeer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				if c.started {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
					w.(http.Flusher).Flush()
				}
				close(entered)
				<-r.Context().Done() // stalls until the client gives up
			})
			timer := &fakeTimer{}
			var timerD time.Duration
			client := NewClient(ClientOptions{AfterFunc: func(d time.Duration, f func()) IdleTimer {
				timer.f, timerD = f, d
				return timer
			}})
			m, err := NewChat(client, ChatOptions{Provider: OpenAICompatible, Endpoint: p.srv.URL + "/v1/chat/completions", Model: "m", StreamIdleTimeout: 7 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			deltas := make(chan string, 1)
			done := make(chan error, 1)
			go func() {
				_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}}, func(s string) error {
					deltas <- s
					return nil
				})
				done <- err
			}()
			<-entered
			if c.started {
				<-deltas // the delta escaped; the stream now stalls
			}
			timer.fire()
			err = <-done
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != CodeAttemptTimedOut || pe.Delivery != c.delivery || pe.Escaped != c.escaped || !errors.Is(err, ErrStreamIdle) {
				t.Fatalf("err = %#v", err)
			}
			if timerD != 7*time.Second {
				t.Fatalf("timer armed for %v", timerD)
			}
			if c.started && timer.resets < 2 {
				t.Fatalf("%d resets: reads did not re-arm the timer", timer.resets)
			}
		})
	}
}
