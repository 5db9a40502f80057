// Command conformanceclient is an MCP client built on package mcp for the
// MCP conformance suite's client scenarios. The suite runs it as
// `conformanceclient URL` with MCP_CONFORMANCE_SCENARIO naming the
// scenario; it opens a catalog on the URL (a loopback fixture), calls what
// the scenario expects, and closes.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: conformanceclient URL")
	}
	u, err := url.Parse(os.Args[len(os.Args)-1])
	if err != nil {
		return err
	}
	// The suite names its fixture "localhost"; the catalog accepts plain
	// HTTP only on a loopback IP.
	if u.Hostname() == "localhost" {
		u.Host = "127.0.0.1:" + u.Port()
	}
	srv := mcp.Server{Name: "conformance", Transport: mcp.HTTP, URL: u.String(), Required: true,
		StartupTimeout: 10 * time.Second, OperationTimeout: 10 * time.Second}
	auth, err := authority.New(authority.Config{MCPServers: map[string]authority.MCPServer{"conformance": {}}})
	if err != nil {
		return err
	}
	ctx := context.Background()
	cat, err := mcp.Open(ctx, mcp.Options{Servers: []mcp.Server{srv}, Authority: auth, AllowLoopbackHTTP: true, ClientName: "pablo-conformance", ClientVersion: "0.1.0"})
	if err != nil {
		return err
	}
	defer cat.Close()
	switch scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO"); scenario {
	case "initialize":
	case "tools_call":
		res, err := cat.CallTool(ctx, authority.MCPTool("conformance", "add_numbers"), json.RawMessage(`{"a":5,"b":3}`))
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, res.Text)
	case "sse-retry":
		res, err := cat.CallTool(ctx, authority.MCPTool("conformance", "test_reconnection"), json.RawMessage(`{}`))
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, res.Text)
	default:
		return fmt.Errorf("scenario %q is not supported", scenario)
	}
	return cat.Close()
}
