package pablo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
)

// Load a deployment, then ask its authority about two MCP tools: the
// configured one the policy allows, and one the policy never named.
func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.mcp.servers.evidence]
transport = "http"
url = "https://mcp.example.com/mcp"

[[options.mcp.policies]]
[options.mcp.policies.tools]
default = "deny"
allow = [{ id = "support.read-evidence", value = "mcp/evidence/read_evidence" }]
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": dir},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	set, _ := d.Authority()
	for _, id := range []authority.ID{"mcp/evidence/read_evidence", "mcp/evidence/delete_evidence"} {
		dec := set.Decide(authority.Request{Capability: id})
		fmt.Println(id, dec.Allowed, dec.RuleID)
	}
	// Output:
	// mcp/evidence/read_evidence true support.read-evidence
	// mcp/evidence/delete_evidence false builtin.mcp.tools.allowlist_miss
}

// A typed error names the code, the key's JSON pointer, the file and line:
// a *deployment.Error, whoever raised it.
func ExampleLoad_error() {
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte("schema_version = 1\n[options.shell]\nenabeld = false\n"), 0o600)
	_, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": dir},
	})
	fmt.Println(err)
	var de *deployment.Error
	if errors.As(err, &de) {
		fmt.Println(de.Code, de.Option, de.Line)
	}
	// Output:
	// config_unknown_option deployment.toml:3 at /options/shell/enabeld: unknown option "enabeld"; did you mean "enabled"?
	// config_unknown_option /options/shell/enabeld 3
}

// Ask, without running a task, what a task would decide on one tool call:
// the same function the run loop decides calls with, so a path outside
// the workspace is denied here as it is in a run.
func ExampleDeployment_Decide() {
	dir, _ := os.MkdirTemp("", "pablo-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.shell]
enabled = false
[options.policy.read_roots]
default = "deny"
allow = [{ id = "read.docs", value = "docs" }]
`), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": dir},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, path := range []string{"docs/plan.md", "../../etc/passwd", "notes.md"} {
		args, _ := json.Marshal(map[string]string{"path": path})
		dec, err := d.Decide(context.Background(), authority.FSRead, args)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(path, dec.Allowed, dec.Layer, dec.RuleID)
	}
	// Output:
	// docs/plan.md true options/policy read.docs
	// ../../etc/passwd false workspace builtin.workspace
	// notes.md false options/policy builtin.read_roots.allowlist_miss
}
