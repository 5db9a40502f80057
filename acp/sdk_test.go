package acp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// The measured reason the framing is ours (README, dependency table): the
// SDK's connection, v0.13.5, skips a garbage line and a batch instead of
// closing, accepts invalid UTF-8 and an unterminated final frame, and
// refuses a frame well under the reference's 32 MiB bound. If a release
// fixes these, this test says so.
func TestSDKConnectionMissesTheBounds(t *testing.T) {
	t.Parallel()
	type got struct {
		method string
		params string
	}
	calls := make(chan got, 8)
	handler := func(_ context.Context, method string, params json.RawMessage) (any, *sdk.RequestError) {
		calls <- got{method, string(params)}
		return map[string]any{}, nil
	}
	inR, inW := io.Pipe()
	conn := sdk.NewConnection(handler, io.Discard, inR)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	go func() {
		io.WriteString(inW, "garbage\n")
		io.WriteString(inW, `[{"jsonrpc":"2.0","id":9,"method":"batch"}]`+"\n")
		io.WriteString(inW, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"utf8\",\"params\":\"\xff\"}\n")
		io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"after_garbage"}`+"\n")
		io.WriteString(inW, `{"jsonrpc":"2.0","id":3,"method":"unterminated"}`)
		inW.Close()
	}()
	seen := map[string]string{}
	for len(seen) < 3 {
		c := <-calls
		seen[c.method] = c.params
	}
	if seen["utf8"] != `"`+"\ufffd"+`"` && seen["utf8"] != "\"\xff\"" {
		t.Errorf("invalid UTF-8 reached the handler as %q", seen["utf8"])
	}
	if _, ok := seen["after_garbage"]; !ok {
		t.Error("the connection closed at the garbage line")
	}
	if _, ok := seen["unterminated"]; !ok {
		t.Error("the unterminated frame was refused")
	}
	<-conn.Done()

	// An 11 MiB frame, a third of the reference's bound, ends the
	// connection unanswered.
	inR, inW = io.Pipe()
	conn = sdk.NewConnection(handler, io.Discard, inR)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	go func() {
		io.WriteString(inW, `{"jsonrpc":"2.0","id":4,"method":"big","params":"`+strings.Repeat("x", 11<<20)+`"}`+"\n")
		inW.Close()
	}()
	<-conn.Done()
	select {
	case c := <-calls:
		t.Errorf("an 11 MiB frame reached the handler: %s", c.method)
	default:
	}
	inR.Close()
}

// The hand-written agent_message_chunk is the SDK's encoding, byte for
// byte, whatever the text holds.
func TestChunkEncodingMatchesTheSDK(t *testing.T) {
	t.Parallel()
	p := newProjector("sess-1", extensions{}, nil, DefaultCoalesceBytes)
	for _, text := range []string{"plain", "", "quote \" backslash \\ tab \t newline \n", "<html> & </html>", "é 日本 🎉", "\u2028\u2029", "bad \xff utf-8", "\x00\x1f"} {
		want, err := json.Marshal(sdk.UpdateAgentMessageText(text))
		if err != nil {
			t.Fatal(err)
		}
		frame := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":` + string(want) + "}}\n"
		if got := string(p.chunk(nil, nil, text)); got != frame {
			t.Errorf("%q:\n got %s\nwant %s", text, got, frame)
		}
	}
}
