package mcp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pabloagent/pablo/authority"
)

// The official Go SDK is here as the measured reason for owning the client
// transports (README, Dependencies): the same stdio server, called through
// its client and through ours. It is a test-only dependency: nothing outside
// this file imports it.

// goSDKSession connects the official SDK's client to a server of its own,
// launched from the same command as srv, and initializes it.
func goSDKSession(b *testing.B, srv Server) *sdk.ClientSession {
	b.Helper()
	cl := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = []string{}
	cs, err := cl.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// goSDKCall is the SDK's request that matches call: the same tool, the same
// arguments and, like ours, a progress token.
func goSDKCall(b *testing.B, call authority.Call) *sdk.CallToolParams {
	b.Helper()
	var args map[string]any
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		b.Fatal(err)
	}
	_, tool, _ := call.Tool.MCP()
	return &sdk.CallToolParams{Name: tool, Arguments: args, Meta: sdk.Meta{"progressToken": 1}}
}

// goSDKServers are the stdio servers both clients call: the fault server's
// echo tool (Go, mcp-go's server side) and, where the real peers are
// installed, the reference "everything" server's echo tool (Node.js).
func goSDKServers(b *testing.B) map[string]Server {
	servers := map[string]Server{"fault": faultStdio(b, "bench", "ok")}
	if os.Getenv("PABLO_SKIP_PEERS") != "1" {
		if prefix := os.Getenv("PABLO_NPM_PREFIX"); prefix != "" {
			servers["everything"] = needPeers(b).everythingStdio("bench")
		}
	}
	return servers
}

// BenchmarkStdioToolCallGoSDK calls one stdio server through the official
// Go SDK's client and through our catalog, with its governance: argument
// validation, the per-call deadline, bounded frames, result checks,
// redaction and the ToolResult mapping. Compare the two clients with
// benchstat:
//
//	go test -run '^$' -bench 'StdioToolCallGoSDK$' -count 10 ./mcp > gosdk.txt
//	benchstat -col /client gosdk.txt
func BenchmarkStdioToolCallGoSDK(b *testing.B) {
	servers := goSDKServers(b)
	for _, name := range []string{"fault", "everything"} {
		srv, ok := servers[name]
		if !ok {
			continue
		}
		b.Run("server="+name, func(b *testing.B) {
			c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
			cs := goSDKSession(b, srv)
			call := benchCall()
			params := goSDKCall(b, call)
			ctx := context.Background()
			b.Run("client=go-sdk", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
						b.Fatal(res, err)
					}
				}
			})
			b.Run("client=pablo", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if r := c.Call(ctx, call); r.Status != "completed" {
						b.Fatalf("%+v", r)
					}
				}
			})
		})
	}
}

// BenchmarkStdioToolCallGoSDKPaired alternates an SDK call and one of ours
// on every iteration (their order flipping each time), so both see the same
// machine, and reports each median and their ratio.
func BenchmarkStdioToolCallGoSDKPaired(b *testing.B) {
	servers := goSDKServers(b)
	for _, name := range []string{"fault", "everything"} {
		srv, ok := servers[name]
		if !ok {
			continue
		}
		b.Run("server="+name, func(b *testing.B) { pairedGoSDK(b, srv) })
	}
}

func pairedGoSDK(b *testing.B, srv Server) {
	c := open(b, Options{Servers: []Server{srv}, Authority: allowAll(b, srv)})
	cs := goSDKSession(b, srv)
	call := benchCall()
	params := goSDKCall(b, call)
	ctx := context.Background()
	var ours, theirs []time.Duration
	pablo := func() {
		t0 := time.Now()
		if r := c.Call(ctx, call); r.Status != "completed" {
			b.Fatalf("%+v", r)
		}
		ours = append(ours, time.Since(t0))
	}
	goSDK := func() {
		t0 := time.Now()
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatal(res, err)
		}
		theirs = append(theirs, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			pablo()
			goSDK()
		} else {
			goSDK()
			pablo()
		}
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	om, tm := med(ours), med(theirs)
	b.ReportMetric(om, "pablo-median-ns")
	b.ReportMetric(tm, "go-sdk-median-ns")
	b.ReportMetric(om/tm, "pablo/go-sdk")
}
