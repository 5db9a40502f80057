package acp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/acp"
)

// On real pipes (pollable files, as the CLI's stdin and stdout can be
// made), the end of ctx returns Serve with its reader joined, and a stalled
// write is cut by the file's write deadline even when the injected clock
// never moves.
func TestRealPipes(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["` + strings.Repeat("x", 256<<10) + `"]}]}`})
	pipes := func(t *testing.T) (inR, inW, outR, outW *os.File) {
		inR, inW, _ = os.Pipe()
		outR, outW, _ = os.Pipe()
		t.Cleanup(func() { inR.Close(); inW.Close(); outR.Close(); outW.Close() })
		return
	}
	t.Run("ctx ends Serve and joins the reader", func(t *testing.T) {
		t.Parallel()
		inR, _, _, outW := pipes(t)
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- acp.Serve(ctx, fx.sessions, inR, outW, acp.Options{Clock: newFakeClock()}) }()
		cancel()
		if err := <-served; !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve: %v", err)
		}
	})
	t.Run("a write deadline ends a stall", func(t *testing.T) {
		t.Parallel()
		inR, inW, outR, outW := pipes(t)
		served := make(chan error, 1)
		go func() {
			served <- acp.Serve(context.Background(), fx.sessions, inR, outW, acp.Options{Clock: newFakeClock(), WriteTimeout: 200 * time.Millisecond})
		}()
		out := bufio.NewReader(outR)
		io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
		out.ReadString('\n')
		io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"`+fx.ws+`","mcpServers":[]}}`+"\n")
		line, _ := out.ReadString('\n')
		sid := line[strings.Index(line, `"sessionId":"`)+13:]
		sid = sid[:strings.IndexByte(sid, '"')]
		// A 256 KiB chunk into a 64 KiB pipe nobody reads.
		io.WriteString(inW, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"x"}]}}`+"\n")
		if err := <-served; !errors.Is(err, acp.ErrWriteStalled) {
			t.Fatalf("Serve: %v", err)
		}
	})
}
