// Command counter is a stdio MCP server, on the official Go MCP SDK, whose
// one tool "bump" is idempotent by the key a client sends in the call's
// _meta (io.github.pabloagent/idempotency-key): the first call with a key
// executes, a later one returns the first one's result and executes
// nothing. It appends one line per call to the file named by -log,
// "call KEY" for each call it receives and "exec KEY" for each execution,
// and reads that file back when it starts, so a server started again
// after its host was killed still knows every key it executed. The crash
// tests of the reference CLI count these lines: a call resumed after a
// crash must reach it under its original key, and at most once.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// keyMeta is the _meta key Pablo sends a call's idempotency key under.
const keyMeta = "io.github.pabloagent/idempotency-key"

// counter is the server's state: the keys executed, and the log they are
// kept in.
type counter struct {
	mu       sync.Mutex
	log      *os.File
	executed map[string]bool
	total    int
}

// bumpIn is the tool's input: what to count.
type bumpIn struct {
	Label string `json:"label" jsonschema:"what is counted"`
}

func main() {
	path := flag.String("log", "", "the file each call and execution is appended to")
	flag.Parse()
	if *path == "" {
		log.Fatal("counter: -log is required")
	}
	c := &counter{executed: map[string]bool{}}
	if b, err := os.ReadFile(*path); err == nil {
		for line := range strings.Lines(string(b)) {
			if key, ok := strings.CutPrefix(strings.TrimSpace(line), "exec "); ok {
				c.executed[key] = true
				c.total++
			}
		}
	}
	f, err := os.OpenFile(*path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		log.Fatal(err)
	}
	c.log = f
	s := mcp.NewServer(&mcp.Implementation{Name: "counter", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "bump",
		Description: "Counts one event, once per idempotency key.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true},
	}, c.bump)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// bump executes a call once per key and records what it received.
func (c *counter) bump(_ context.Context, req *mcp.CallToolRequest, in bumpIn) (*mcp.CallToolResult, any, error) {
	key, _ := req.Params.Meta[keyMeta].(string)
	if key == "" {
		return nil, nil, fmt.Errorf("no idempotency key in _meta[%q]", keyMeta)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := bufio.NewWriter(c.log)
	fmt.Fprintf(w, "call %s\n", key)
	if !c.executed[key] {
		c.executed[key] = true
		c.total++
		fmt.Fprintf(w, "exec %s\n", key)
	}
	if err := w.Flush(); err != nil {
		return nil, nil, err
	}
	if err := c.log.Sync(); err != nil {
		return nil, nil, err
	}
	text := fmt.Sprintf("counted %s (%d executions in all)", in.Label, c.total)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}
