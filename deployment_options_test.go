package pablo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestOptionsViewSpellsTheDeploymentsValues: every value of the public
// options view is the resolved deployment's value under the same TOML key
// (each group the view holds, each key of each group, down every map), so
// the view can neither drop a value nor swap two; and a group the view
// leaves out is not half there.
func TestOptionsViewSpellsTheDeploymentsValues(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "skills"), 0o700)
	doc := `schema_version = 1
[credentials.otel]
consumer = "otel.headers"
sources = [{ kind = "environment", name = "OTEL" }]
[credentials.token]
consumer = "mcp.env"
sources = [{ kind = "environment", name = "TOKEN" }]
[credentials.header]
consumer = "mcp.headers"
sources = [{ kind = "environment", name = "HEADER" }]
[credentials.bearer]
consumer = "a2a.bearer"
sources = [{ kind = "environment", name = "BEARER" }]
[options.interfaces]
cli_output = "json"
[options.interfaces.acp]
max_sessions = 3
client_mcp_servers = true
workspace_roots = [{ base = "workspace", path = "." }]
[options.trace]
path = { base = "workspace", path = "trace.jsonl" }
capture_content = true
max_bytes = 65536
[options.otel]
exporter = "otlp"
endpoint = "https://otel.example.test/v1/traces"
headers = "otel"
compression = "gzip"
service_name = "view"
resource_attributes = { "deployment.environment" = "test" }
propagators = ["tracecontext"]
[options.skills]
roots = { team = { base = "config", path = "skills" } }
files = { review = { base = "config", path = "review.md" } }
pins = { "file/review" = "sha256:0000000000000000000000000000000000000000000000000000000000000000" }
[options.skills.inline.triage]
description = "Triage."
instructions = "Label it."
owner = "support"
version = "1.0.0"
task_kinds = ["triage"]
[options.mcp.servers.local]
transport = "stdio"
command = "/usr/bin/printf"
args = ["-mode", "ok"]
cwd = { base = "workspace", path = "." }
env = { TOKEN = "token" }
required = true
pins = { echo = "sha256:0000000000000000000000000000000000000000000000000000000000000000" }
[options.mcp.servers.remote]
transport = "http"
url = "https://mcp.example.test/mcp"
headers = { authorization = "header" }
[options.a2a.remotes.reviewer]
card_url = "https://agents.example.test/card"
endpoint = "https://agents.example.test/a2a"
trace_context = true
bearer = { scheme = "Bearer", credential = "bearer" }
`
	cfg := filepath.Join(dir, "deployment.toml")
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Load(LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": dir}})
	if err != nil {
		t.Fatal(err)
	}
	asTree := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	view, resolved := asTree(d.Options()), asTree(d.c.Options)
	var within func(ptr string, v, r any) int
	within = func(ptr string, v, r any) int {
		vm, ok := v.(map[string]any)
		if !ok {
			if !reflect.DeepEqual(v, r) {
				t.Errorf("%s: the view has %v, the deployment %v", ptr, v, r)
			}
			return 1
		}
		rm, ok := r.(map[string]any)
		if !ok {
			t.Errorf("%s: the view has an object, the deployment %v", ptr, r)
			return 0
		}
		n := 0
		for k, sub := range vm {
			n += within(ptr+"/"+k, sub, rm[k])
		}
		return n
	}
	if n := within("/options", view, resolved); n < 40 {
		t.Errorf("compared %d values: the fixture sets too little to prove the view", n)
	}
	for _, group := range []string{"interfaces", "trace", "otel", "skills", "mcp", "a2a"} {
		if _, ok := view[group]; !ok {
			t.Errorf("the view has no %s group", group)
		}
	}
}
