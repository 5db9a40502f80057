package pablo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo/graph"

	"github.com/pabloagent/pablo"
)

// Compute a deployment's capability graph offline and ask why a
// capability is not admitted: an MCP server whose header credential has
// no source (the default model's credential has none either).
func ExampleDeployment_Why() {
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.shell]
enabled = false
[options.mcp.servers.records]
transport = "http"
url = "https://mcp.example.com/mcp"
headers = { authorization = "records" }
[credentials.records]
consumer = "mcp.headers"
sources = [{ kind = "environment", name = "RECORDS_TOKEN" }]
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": dir}})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := d.Graph(context.Background(), graph.Options{})
	for _, n := range g.NotReady() {
		fmt.Println(n.ID, n.State)
	}
	e, _ := d.Why(context.Background(), "records", graph.Options{})
	c := e.Causes[0]
	fmt.Println(e.Admitted, c.Code, c.Credential, c.Consumer, c.Destination)
	// Output:
	// mcp:records missing_grant
	// model missing_grant
	// credential:gateway@https://ai-gateway.vercel.sh/v1/chat/completions missing_grant
	// credential:records@mcp:records:header:authorization missing_grant
	// false credential_unavailable records mcp.headers mcp:records:header:authorization
}
