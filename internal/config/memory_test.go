package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const memoryDoc = `schema_version = 1

[options.memory]
repository = { base = "binding", name = "memory", path = "." }
ref = "refs/heads/main"
graph_paths = ["records/"]
docs_paths = ["handbook/", "runbooks/"]
ontology = { base = "binding", name = "memory", path = "ontology.toml" }

[options.memory.grants.query]
kinds = ["service", "team"]
paths = ["records/"]

[options.memory.grants.diff]
kinds = ["*"]
paths = ["*"]
refresh = true
`

func withMemoryBinding(t *testing.T) func(*LoadOptions) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ontology.toml"), []byte("[kinds.service]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o *LoadOptions) { o.Bindings["memory"] = dir }
}

func TestMemoryOptionsLoadAsWritten(t *testing.T) {
	d, err := loadString(t, memoryDoc, withMemoryBinding(t))
	if err != nil {
		t.Fatal(err)
	}
	m := d.Options.Memory
	if !m.Configured() || m.Ref != "refs/heads/main" || len(m.DocsPaths) != 2 || m.Grants["query"].Kinds[1] != "team" || !m.Grants["diff"].Refresh {
		t.Fatalf("options.memory = %+v", m)
	}
	if err := d.CheckPaths(); err != nil {
		t.Fatalf("CheckPaths: %v", err)
	}
	if _, err := d.MemoryRepository(); err != nil {
		t.Fatal(err)
	}
	// The section is part of the fingerprint.
	other, err := loadString(t, strings.Replace(memoryDoc, `kinds = ["service", "team"]`, `kinds = ["service"]`, 1), withMemoryBinding(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.Fingerprint == other.Fingerprint {
		t.Errorf("narrowing a memory grant left the fingerprint unchanged")
	}
}

func TestMemoryOptionsRefuseWithFileAndLine(t *testing.T) {
	cases := []struct {
		name, from, to, option string
		line                   int
	}{
		{"ref not a full ref", `ref = "refs/heads/main"`, `ref = "main"`, "/options/memory/ref", 5},
		{"graph path leaves the repository", `graph_paths = ["records/"]`, `graph_paths = ["../records/"]`, "/options/memory/graph_paths/0", 6},
		{"unknown grant", `[options.memory.grants.query]`, `[options.memory.grants.search]`, "/options/memory/grants/search", 0},
		{"refresh outside diff", "paths = [\"records/\"]\n\n[options", "paths = [\"records/\"]\nrefresh = true\n\n[options", "/options/memory", 0},
		{"bad kind", `kinds = ["service", "team"]`, `kinds = ["service", "te am"]`, "/options/memory/grants/query/kinds/1", 11},
		{"unknown key", `ref = "refs/heads/main"`, "ref = \"refs/heads/main\"\nbranch = \"x\"", "/options/memory/branch", 6},
		{"repository not a binding", `repository = { base = "binding", name = "memory", path = "." }`, `repository = { base = "config", path = "." }`, "/options/memory", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(memoryDoc, c.from, c.to, 1)
			if doc == memoryDoc {
				t.Fatal("the case changed nothing")
			}
			_, err := loadString(t, doc, withMemoryBinding(t))
			var code Code = CodeInvalidValue
			if c.name == "unknown key" {
				code = CodeUnknownOption
			}
			ce := wantCode(t, err, code, c.option)
			if ce.Source != "deployment.toml" || (c.line != 0 && ce.Line != c.line) {
				t.Errorf("error at %s:%d, want deployment.toml:%d (%v)", ce.Source, ce.Line, c.line, ce)
			}
		})
	}
	if _, err := loadString(t, "schema_version = 1\n[options.memory]\nref = \"HEAD\"\n"); err == nil || !strings.Contains(err.Error(), "repository is required") {
		t.Errorf("options.memory without a repository = %v, want repository is required", err)
	}
}
