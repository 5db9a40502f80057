package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// The name a model provider sees for an MCP tool is a fixed-length alias
// of its qualified ID.
func ExampleAlias() {
	fmt.Println(mcp.Alias(authority.MCPTool("records", "lookup")))
	// Output: mcp_b385a7484020f29c7fe1db17ccf2d3660f0938e5d8e313d2
}

// A host opens one catalog per task, lists its admitted tools and closes
// it when the task settles.
func ExampleOpen() {
	srv := mcp.Server{
		Name: "records", Transport: mcp.Stdio,
		Command: "/opt/records/bin/records-server", Args: []string{"--stdio"},
		Dir: "/srv/work", Env: map[string]string{"RECORDS_TOKEN": "records"},
		Required: true, StartupTimeout: 30 * time.Second,
	}
	auth, _ := authority.New(authority.Config{MCPServers: map[string]authority.MCPServer{"records": {Launcher: srv.Command}}})
	resolver := authority.NewResolver(authority.ResolverOptions{})
	cat, err := mcp.Open(context.Background(), mcp.Options{Servers: []mcp.Server{srv}, Authority: auth, Resolve: resolver.Resolve})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()
	for _, t := range cat.Tools() {
		fmt.Println(t.ID, mcp.Alias(t.ID))
	}
}

// Progress a server reports while a call runs reaches the host live, on
// the goroutine that made the call; with a tracer each request is a client
// span too.
func ExampleOptions_onProgress() {
	srv := mcp.Server{Name: "builds", Transport: mcp.Stdio, Command: "/opt/builds/bin/builds-server", Required: true}
	auth, _ := authority.New(authority.Config{MCPServers: map[string]authority.MCPServer{"builds": {Launcher: srv.Command}}})
	cat, err := mcp.Open(context.Background(), mcp.Options{
		Servers: []mcp.Server{srv}, Authority: auth,
		OnProgress: func(_ context.Context, tool authority.ID, message string) {
			fmt.Printf("%s: %s\n", tool, message) // e.g. "mcp/builds/run: compiling 3/10"
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()
	cat.CallTool(context.Background(), "mcp/builds/run", json.RawMessage(`{"target":"all"}`))
}

// A stdio server runs in the bubblewrap sandbox unless the host says
// otherwise: the zero Sandbox is required, no network, its Dir read-only.
// A server that needs the network says so, and every call's decision
// records the sandbox it ran in.
func ExampleSandbox() {
	srv := mcp.Server{Name: "search", Transport: mcp.Stdio, Command: "/opt/search/bin/search", Dir: "/srv/work",
		Sandbox: mcp.Sandbox{Network: "allow", ReadPaths: []string{"/opt/search"}}}
	fmt.Println(srv.Sandbox.Normalized())
	fmt.Println(mcp.Sandbox{}.Normalized())
	fmt.Println(mcp.Sandbox{Mode: "off"}.Normalized())
	// Output:
	// required filesystem=read-only network=allow read_paths=1
	// required filesystem=read-only network=deny
	// off
}
