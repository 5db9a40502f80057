package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
// it when the task settles. The server runs in the default sandbox; its
// environment holds only what configuration names, each value a
// credential resolved for exactly this server and variable.
func ExampleOpen() {
	srv := mcp.Server{
		Name: "records", Transport: mcp.Stdio,
		Command:  mcp.FaultServerCommand(), // an absolute path, such as /opt/records/bin/records-server
		Env:      map[string]string{"PABLO_TEST_TOKEN": "records-token"},
		Required: true, StartupTimeout: 30 * time.Second,
	}
	auth, _ := authority.New(authority.Config{MCPServers: map[string]authority.MCPServer{"records": {Launcher: srv.Command}},
		Layers: []authority.Layer{{ID: "policy", Kind: authority.KindPolicy, Dimensions: map[authority.Dimension]*authority.Rules{
			authority.DimMCPTools: {Default: authority.Deny, Allow: []authority.Rule{
				{ID: "records.echo", Value: "mcp/records/echo"}, {ID: "records.env", Value: "mcp/records/env"},
			}},
		}}}})
	resolver := authority.NewResolver(authority.ResolverOptions{
		Credentials: []authority.Credential{{Name: "records-token", Consumer: authority.ConsumerMCPEnv,
			Sources:      []authority.Source{{Kind: authority.SourceEnvironment, Name: "RECORDS_TOKEN"}},
			Destinations: []string{"mcp:records:env:PABLO_TEST_TOKEN"}}},
		LookupEnv: func(name string) (string, bool) {
			return map[string]string{"RECORDS_TOKEN": "s3cret"}[name], name == "RECORDS_TOKEN"
		},
	})
	cat, err := mcp.Open(context.Background(), mcp.Options{Servers: []mcp.Server{srv}, Authority: auth, Resolve: resolver.Resolve})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()
	for _, t := range cat.Tools() {
		fmt.Println(t.ID)
	}
	res, err := cat.CallTool(context.Background(), "mcp/records/env", json.RawMessage(`{}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// The server sees its variable and the sandbox's HOME and PWD, nothing
	// of this process; a result that echoes the credential is masked.
	fmt.Println(strings.Join(res.Text, ""))
	// Output:
	// mcp/records/echo
	// mcp/records/env
	// HOME,PABLO_TEST_TOKEN,PWD;token=[redacted]
}

// Progress a server reports while a call runs reaches the host live, on
// the goroutine that made the call; with a tracer each request is a client
// span too.
func ExampleOptions_onProgress() {
	srv := mcp.Server{Name: "builds", Transport: mcp.Stdio, Command: mcp.FaultServerCommand(), Required: true}
	auth, _ := authority.New(authority.Config{MCPServers: map[string]authority.MCPServer{"builds": {Launcher: srv.Command}}})
	cat, err := mcp.Open(context.Background(), mcp.Options{
		Servers: []mcp.Server{srv}, Authority: auth,
		OnProgress: func(_ context.Context, tool authority.ID, message string) {
			fmt.Printf("%s: %s\n", tool, message)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()
	if _, err := cat.CallTool(context.Background(), "mcp/builds/work", json.RawMessage(`{}`)); err != nil {
		fmt.Println(err)
	}
	// Output:
	// mcp/builds/work: reading
	// mcp/builds/work: checking
	// mcp/builds/work: token
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
