package providers

import (
	"strings"
	"testing"
)

// An event no blank line completes is not delivered (internal/sse's rule,
// the same through a2a, mcp and the providers): a stream whose last event
// lacks its blank line fails as a cut stream, whichever wire the provider
// speaks, instead of completing with that event.
func TestUnterminatedLastEventIsNotDelivered(t *testing.T) {
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			body := a.wire.text([]string{"Paid ", "on ", "time."}, true)
			if !strings.HasSuffix(body, "\n\n") {
				t.Fatalf("the fixture does not end with a blank line: %q", body)
			}
			p := newPeer(t, stream(200, strings.TrimSuffix(body, "\n")))
			resp, _, err := generate(t, a.build(NewClient(ClientOptions{}), p.srv.URL))
			if resp != nil {
				t.Fatalf("an unterminated last event completed the call: %+v", resp)
			}
			e := wantError(t, err, CodeMalformed, ResponseReceived, "")
			if !strings.Contains(e.Error(), "stream ended") {
				t.Fatalf("the error does not say the stream was cut: %v", e)
			}
		})
	}
}
