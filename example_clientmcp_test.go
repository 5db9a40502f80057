package pablo_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
)

// A deployment that admits an editor's MCP servers runs them as its own:
// the server joins the configured ones, and its environment value is
// named by a reserved credential, never written into the configuration.
func ExampleDeployment_WithClientMCPServers() {
	dir, _ := os.MkdirTemp("", "deployment")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["ok"]}]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.model]
provider = "script"
script = { base = "source", path = "script.json" }
[options.interfaces.acp]
client_mcp_servers = true
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": dir}})
	if err != nil {
		fmt.Println(err)
		return
	}
	withEditor, err := d.WithClientMCPServers([]pablo.SessionMCPServer{
		{Name: "editor-files", Command: "/usr/bin/editor-files", Args: []string{"--stdio"}, Env: map[string]string{"TOKEN": "the user's own"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts, _ := withEditor.MCPOptions(pablo.HostOptions{})
	for _, s := range opts.Servers {
		fmt.Println(s.Name, s.Transport, s.Command, s.Env["TOKEN"])
	}
	// Output:
	// editor-files stdio /usr/bin/editor-files acp-client/editor-files/env/TOKEN
}
