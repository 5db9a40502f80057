package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaDir holds the JSON Schemas of every JSON output of the CLI.
var schemaDir = filepath.Join("..", "..", "docs", "schemas")

// jsonSchemas maps every command that takes --json to the $ids of the
// schemas its table entry names (commands.go), success first.
func jsonSchemas(t *testing.T, fileOf map[string]string) map[string][]string {
	t.Helper()
	idOf := map[string]string{}
	for id, f := range fileOf {
		idOf[f] = id
	}
	out := map[string][]string{}
	for _, c := range commands() {
		for _, f := range c.schemas {
			id, ok := idOf[f]
			if !ok {
				t.Errorf("pablo %s names %s, which is not in %s", c.path, f, schemaDir)
			}
			out[c.path] = append(out[c.path], id)
		}
	}
	return out
}

// traceSchema is the schema of one line of a native trace (run --trace).
const traceSchema = "urn:pablo:cli:trace-event"

// loadSchemas reads every schema of schemaDir and resolves it, each $ref
// to another file by that file's $id.
func loadSchemas(t *testing.T) (map[string]*jsonschema.Resolved, map[string]string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", schemaDir, err)
	}
	raw := map[string]*jsonschema.Schema{}
	fileOf := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.HasPrefix(s.ID, "urn:pablo:cli:") || s.Schema != "https://json-schema.org/draft/2020-12/schema" || s.Title == "" {
			t.Errorf("%s: want a Draft 2020-12 $schema, a urn:pablo:cli: $id and a title; got %q %q %q", f, s.Schema, s.ID, s.Title)
		}
		if s.ID != "urn:pablo:cli:common" && !strings.Contains(s.Description, "schema_version") {
			t.Errorf("%s: the description does not name the output's schema_version space", f)
		}
		if _, dup := raw[s.ID]; dup {
			t.Errorf("%s: $id %s is taken", f, s.ID)
		}
		raw[s.ID] = &s
		fileOf[s.ID] = filepath.Base(f)
	}
	loader := func(u *url.URL) (*jsonschema.Schema, error) {
		u2 := *u
		u2.Fragment = ""
		if s, ok := raw[u2.String()]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("no schema %s in %s", u, schemaDir)
	}
	out := map[string]*jsonschema.Resolved{}
	for id, s := range raw {
		r, err := s.Resolve(&jsonschema.ResolveOptions{Loader: loader})
		if err != nil {
			t.Fatalf("%s: %v", fileOf[id], err)
		}
		out[id] = r
	}
	return out, fileOf
}

// TestEveryJSONCommandHasASchema: every command of the table that takes
// --json names the schemas of its output, each a file of docs/schemas the
// README's table lists.
func TestEveryJSONCommandHasASchema(t *testing.T) {
	schemas, fileOf := loadSchemas(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := jsonSchemas(t, fileOf)
	for _, c := range commands() {
		if !slices.ContainsFunc(c.flags, func(f flag) bool { return f.name == "json" }) {
			continue
		}
		ids, ok := want[c.path]
		if !ok {
			t.Errorf("pablo %s takes --json but its entry in commands() names no schema of its output", c.path)
		}
		for _, id := range ids {
			if schemas[id] == nil {
				t.Errorf("pablo %s: no schema %s in %s", c.path, id, schemaDir)
				continue
			}
			if row := "`pablo " + c.path + "`"; !bytes.Contains(readme, []byte(row)) || !bytes.Contains(readme, []byte("docs/schemas/"+fileOf[id])) {
				t.Errorf("the README's schema table lacks %s or docs/schemas/%s", row, fileOf[id])
			}
		}
		delete(want, c.path)
	}
	for path := range want {
		t.Errorf("pablo %s names a schema but takes no --json", path)
	}
	run, _ := lookup("run")
	if schemas[traceSchema] == nil || !bytes.Contains(readme, []byte("docs/schemas/"+fileOf[traceSchema])) || !strings.Contains(strings.Join(run.notes, "\n"), fileOf[traceSchema]) {
		t.Errorf("the trace schema is missing, or the README or run's help does not name it")
	}
}

// TestJSONOutputsMatchTheirSchemas runs the built binary through success
// and failure of every --json command and validates each document (and
// each line of a native trace) against its schema. A field an output
// gains without its schema fails here: the schemas close every object
// whose members the CLI owns.
func TestJSONOutputsMatchTheirSchemas(t *testing.T) {
	schemas, fileOf := loadSchemas(t)
	outputs := jsonSchemas(t, fileOf)
	dir := t.TempDir()
	// The fault MCP server builds while the CLI does.
	fault := filepath.Join(dir, "fault")
	var buildOut bytes.Buffer
	build := exec.Command("go", "build", "-o", fault, "../mcpservers/fault")
	build.Stdout, build.Stderr = &buildOut, &buildOut
	if err := build.Start(); err != nil {
		t.Fatal(err)
	}
	pablo := builtPablo(t)
	if err := build.Wait(); err != nil {
		t.Fatalf("build the fault server: %v\n%s", err, buildOut.String())
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	demo := []string{"--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace=" + filepath.Join("demo", "work"), "--bind", "skills=" + filepath.Join("demo", "skills")}
	script := []string{"--script", filepath.Join("demo", "script.json")}
	bad := []string{"--config", filepath.Join(dir, "absent.toml")}
	noSkills := []string{"--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace=" + filepath.Join("demo", "work")}
	store := filepath.Join(dir, "ledger.db")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	servers := write("mcp.toml", `schema_version = 1
[credentials.records]
consumer = "mcp.env"
sources = [{ kind = "environment", name = "PATH" }]
[options.mcp.servers.records]
transport = "stdio"
command = "`+fault+`"
args = ["-mode", "ok"]
env = { PABLO_TEST_TOKEN = "records" }
required = true
`)
	write("turns.json", `{"turns":[{"text":["never reached"]}]}`)
	brokenRun := write("broken-run.toml", `schema_version = 1
[options.model]
provider = "script"
script = { base = "source", path = "turns.json" }
[options.mcp.servers.records]
transport = "stdio"
command = "`+fault+`"
args = ["-mode", "exit"]
required = true
`)
	// A model that writes a secret of a built-in format: its deltas, its
	// call's arguments and its output are masked and counted.
	const key = "AKIAIOSFODNN7EXAMPLE"
	os.WriteFile(filepath.Join(ws, key+".txt"), []byte("a\n"), 0o600)
	secretScript := write("secret.json", `{"turns":[{"text":["Reading `+key+`."],"tool_calls":[{"name":"fs_read","arguments":{"path":"`+key+`.txt"}}]},{"text":["The key is `+key+`."]}]}`)
	plain := write("plain.toml", "schema_version = 1\n[options.shell]\nenabled = false\n")
	shell := write("shell.toml", `schema_version = 1
[options.shell]
enabled = true
[options.shell.commands]
default = "deny"
allow = [{ id = "t.printf", executable = "/usr/bin/printf", args = [], match = "prefix" }]
`)
	gated := write("gated.toml", "schema_version = 1\n[options.shell]\nenabled = true\n[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\nallow = [{ id = \"ops.shell\", value = \"shell.run\", approval = \"required\" }]\n")
	approvedShell := write("approved-shell.toml", `schema_version = 1
[options.approvals]
shell = "required"
[options.shell]
enabled = true
[options.shell.commands]
default = "deny"
allow = [{ id = "t.printf", executable = "/usr/bin/printf", args = [], match = "prefix" }]
`)
	shellScript := write("shell.json", `{"turns":[{"tool_calls":[{"name":"shell.run","arguments":{"command":"/usr/bin/printf hi","cwd":"."}}]},{"text":["done"]}]}`)
	escape := write("escape.json", `{"turns":[{"tool_calls":[{"name":"fs.read","arguments":{"path":"../outside.txt"}}]},{"text":["never reached"]}]}`)
	rm := write("rm.json", `{"turns":[{"tool_calls":[{"name":"shell.run","arguments":{"command":"/bin/rm -rf docs","cwd":"."}}]},{"text":["never reached"]}]}`)
	badSkills := filepath.Join(dir, "skills")
	os.MkdirAll(filepath.Join(badSkills, "broken"), 0o700)
	write(filepath.Join("skills", "broken", "SKILL.md"), "no frontmatter\n")
	os.MkdirAll(filepath.Join(badSkills, "full"), 0o700)
	write(filepath.Join("skills", "full", "SKILL.md"), "---\nname: full\ndescription: Every optional field.\nlicense: MIT\ncompatibility: Linux\nallowed-tools: fs.read shell.run mcp/records/echo\nmetadata:\n  mcp-servers: records\n  output-schema: '{\"type\":\"object\"}'\n---\nBody.\n")
	os.MkdirAll(filepath.Join(badSkills, "dialect"), 0o700)
	write(filepath.Join("skills", "dialect", "SKILL.md"), "---\nname: dialect\ndescription: Written for another agent.\nallowed-tools:\n  - Read\n  - Bash(git log *)\nargument-hint: [file]\nuser-invocable: false\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command, command: ./check.sh}]\n---\nBody.\n")
	badSkillsDeployment := []string{"--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace=" + filepath.Join("demo", "work"), "--bind", "skills=" + badSkills}
	vercel := []string{"--config", filepath.Join(originals, "examples", "vercel.toml"), "--bind", "workspace=" + ws}
	traceOf := func(name string) string { return filepath.Join(dir, name+".jsonl") }
	resumeCfg, resumeWS, resumeScript := resumeFiles(t, dir)
	resumeStore := filepath.Join(dir, "resume.db")
	resumeID := interruptedTask(t, resumeStore, resumeCfg, resumeWS, resumeScript)
	a2aCards := a2aCardServer(t)
	a2aAdmitted := write("a2a.toml", a2aRemotesTOML(a2aCards.URL, "/card", false))
	a2aRefused := write("a2a-refused.toml", a2aRemoteTOML(a2aCards.URL, "/card-elsewhere"))

	mem := newMemoryReviewFixture(t)
	cases := []struct {
		name  string
		args  []string
		exit  int
		trace string // the --trace file to validate line by line
	}{
		{"demo", []string{"demo", "--json", "--store", store}, 0, ""},
		{"run shell with store", []string{"run", "x", "--json", "--capture-content", "--trace", traceOf("shell"), "--store", store, "--script", shellScript, "--config", shell, "--bind", "workspace=" + ws}, 0, traceOf("shell")},
		{"run shell approved", []string{"run", "x", "--json", "--trace", traceOf("approved"), "--store", store, "--script", shellScript, "--config", approvedShell, "--bind", "workspace=" + ws, "--approve", "shell.run"}, 0, traceOf("approved")},
		{"run shell approved captured", []string{"run", "x", "--json", "--capture-content", "--trace", traceOf("approved-captured"), "--script", shellScript, "--config", approvedShell, "--bind", "workspace=" + ws, "--approve", "shell.run"}, 0, traceOf("approved-captured")},
		{"run shell no channel", []string{"run", "x", "--json", "--trace", traceOf("no-channel"), "--store", store, "--script", shellScript, "--config", approvedShell, "--bind", "workspace=" + ws}, 1, traceOf("no-channel")},
		{"run policy denied", append([]string{"run", "x", "--json", "--trace", traceOf("denied"), "--store", store, "--script", escape}, demo...), 1, traceOf("denied")},
		{"run command denied", []string{"run", "x", "--json", "--trace", traceOf("rm"), "--store", store, "--script", rm, "--config", shell, "--bind", "workspace=" + ws}, 1, traceOf("rm")},
		{"demo bogus flag", []string{"demo", "--json", "--bogus"}, 2, ""},
		{"demo with a task", []string{"demo", "x", "--json"}, 2, ""},
		{"run completed", append(append([]string{"run", "x", "--json", "--trace", traceOf("run")}, script...), demo...), 0, traceOf("run")},
		{"run captured", append(append([]string{"run", "x", "--json", "--capture-content", "--trace", traceOf("captured")}, script...), demo...), 0, traceOf("captured")},
		{"run limit exceeded", append(append([]string{"run", "x", "--json", "--max-tool-calls", "0", "--trace", traceOf("limit")}, script...), demo...), 1, traceOf("limit")},
		{"run failed startup", []string{"run", "x", "--json", "--config", brokenRun, "--bind", "workspace=" + ws, "--trace", traceOf("failed")}, 1, traceOf("failed")},
		{"run masked", []string{"run", "x", "--json", "--capture-content", "--trace", traceOf("masked"), "--script", secretScript, "--config", plain, "--bind", "workspace=" + ws}, 0, traceOf("masked")},
		{"resume interrupted", []string{"resume", resumeID, "--json", "--trace", traceOf("resume"), "--store", resumeStore, "--script", resumeScript, "--config", resumeCfg, "--bind", "workspace=" + resumeWS}, 0, traceOf("resume")},
		{"resume settled", []string{"resume", resumeID, "--json", "--store", resumeStore, "--script", resumeScript, "--config", resumeCfg, "--bind", "workspace=" + resumeWS}, 2, ""},
		{"resume not in store", []string{"resume", "no-such-task", "--json", "--store", resumeStore, "--script", resumeScript, "--config", resumeCfg, "--bind", "workspace=" + resumeWS}, 2, ""},
		{"run bogus flag", []string{"run", "x", "--json", "--bogus"}, 2, ""},
		{"run bad config", append([]string{"run", "x", "--json"}, bad...), 2, ""},
		{"run missing binding", append(append([]string{"run", "x", "--json"}, script...), noSkills...), 2, ""},
		{"run missing credential", append([]string{"run", "x", "--json"}, vercel...), 2, ""},
		{"config validate", append([]string{"config", "validate", "--json"}, demo...), 0, ""},
		{"config validate bad config", append([]string{"config", "validate", "--json"}, bad...), 2, ""},
		{"config validate missing binding", append([]string{"config", "validate", "--json"}, noSkills...), 2, ""},
		{"config explain", append([]string{"config", "explain", "--json"}, demo...), 0, ""},
		{"config explain plain", append([]string{"config", "explain"}, vercel...), 0, ""},
		{"config explain bad config", append([]string{"config", "explain", "--json"}, bad...), 2, ""},
		{"policy check allowed", append([]string{"policy", "check", "fs.read", "--read", "evidence.txt", "--json"}, demo...), 0, ""},
		{"policy check denied", append([]string{"policy", "check", "shell.run", "--json"}, demo...), 1, ""},
		{"policy check shell", []string{"policy", "check", "--shell", "/usr/bin/printf hi", "--json", "--config", shell, "--bind", "workspace=" + ws}, 0, ""},
		{"policy check needs approval", []string{"policy", "check", "shell.run", "--json", "--config", gated, "--bind", "workspace=" + ws}, 0, ""},
		{"policy check shell denied", []string{"policy", "check", "--shell", "/bin/rm -rf docs", "--json", "--config", shell, "--bind", "workspace=" + ws}, 1, ""},
		{"policy check two ids", append([]string{"policy", "check", "fs.read", "fs.list", "--json"}, demo...), 2, ""},
		{"skills list", append([]string{"skills", "list", "--json"}, demo...), 0, ""},
		{"skills list invalid package", append([]string{"skills", "list", "--json"}, badSkillsDeployment...), 1, ""},
		{"skills list bad config", append([]string{"skills", "list", "--json"}, bad...), 2, ""},
		{"skills show", append([]string{"skills", "show", "team/evidence-review", "--json"}, demo...), 0, ""},
		{"skills show requirements", append([]string{"skills", "show", "team/full", "--json"}, badSkillsDeployment...), 0, ""},
		{"skills show extensions", append([]string{"skills", "show", "team/dialect", "--json"}, badSkillsDeployment...), 0, ""},
		{"skills show unknown", append([]string{"skills", "show", "team/absent", "--json"}, demo...), 2, ""},
		{"mcp probe no servers", append([]string{"mcp", "probe", "--json"}, demo...), 0, ""},
		{"mcp probe", []string{"mcp", "probe", "--json", "--config", servers, "--bind", "workspace=" + ws}, 0, ""},
		{"mcp probe failed server", []string{"mcp", "probe", "--json", "--config", brokenRun, "--bind", "workspace=" + ws}, 6, ""},
		{"mcp probe bad config", append([]string{"mcp", "probe", "--json"}, bad...), 2, ""},
		{"a2a probe no remotes", append([]string{"a2a", "probe", "--json"}, demo...), 0, ""},
		{"a2a probe admitted", []string{"a2a", "probe", "--json", "--loopback-http", "--config", a2aAdmitted, "--bind", "workspace=" + ws}, 0, ""},
		{"a2a probe refused", []string{"a2a", "probe", "--json", "--loopback-http", "--config", a2aRefused, "--bind", "workspace=" + ws}, 6, ""},
		{"a2a probe bad config", append([]string{"a2a", "probe", "--json"}, bad...), 2, ""},
		{"memory review", mem.args(mem.clean, "--json"), 0, ""},
		{"memory review conflicts", mem.args(mem.colliding, "--json"), 1, ""},
		{"memory review not a patch", mem.args(write("not.patch", "hello\n"), "--json"), 2, ""},
		{"doctor", append([]string{"doctor", "--json"}, demo...), 0, ""},
		{"doctor bad config", append([]string{"doctor", "--json"}, bad...), 2, ""},
		{"doctor missing credential", append([]string{"doctor", "--json"}, vercel...), 3, ""},
		{"doctor probe mcp failed", []string{"doctor", "--json", "--probe", "mcp", "--config", brokenRun, "--bind", "workspace=" + ws}, 6, ""},
		{"doctor probe sandbox", append([]string{"doctor", "--json", "--probe", "sandbox"}, demo...), 0, ""},
		{"doctor probe sandbox missing credential", append([]string{"doctor", "--json", "--probe", "sandbox"}, vercel...), 3, ""},
		{"graph", append([]string{"graph", "--json"}, demo...), 0, ""},
		{"graph probe", []string{"graph", "--json", "--probe", "--config", servers, "--bind", "workspace=" + ws}, 0, ""},
		{"graph bad config", append([]string{"graph", "--json"}, bad...), 2, ""},
		{"why admitted", append([]string{"why", "--json", "fs.read"}, demo...), 0, ""},
		{"why not admitted", append([]string{"why", "--json", "shell.run"}, demo...), 1, ""},
		{"why unknown", append([]string{"why", "--json", "mcp/ghost/x"}, demo...), 2, ""},
		{"why missing credential", append([]string{"why", "--json", "model"}, vercel...), 1, ""},
		{"ledger show", []string{"ledger", "show", "--json", "--store", store}, 0, ""},
		{"ledger recover", []string{"ledger", "recover", "--json", "--store", store}, 0, ""},
		{"ledger show missing store", []string{"ledger", "show", "--json", "--store", filepath.Join(dir, "typo.db")}, 2, ""},
		{"ledger recover bogus flag", []string{"ledger", "recover", "--json", "--bogus"}, 2, ""},
	}
	// Which schemas each command's outputs were validated against: every
	// one jsonSchemas names must be seen.
	seen := map[string]map[string]bool{}
	for _, c := range cases {
		path := c.args[0]
		if isGroup(path) {
			path += " " + c.args[1]
		}
		code, out, errOut := pablo(c.args...)
		if code != c.exit {
			t.Errorf("%s: exit %d, want %d (stdout %q, stderr %q)", c.name, code, c.exit, out, errOut)
		}
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("%s: stdout is not one line: %q", c.name, out)
			continue
		}
		id := validateOne(t, c.name, schemas, outputs[path], out)
		if seen[path] == nil {
			seen[path] = map[string]bool{}
		}
		seen[path][id] = true
		if c.trace == "" {
			continue
		}
		f, err := os.Open(c.trace)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			n++
			validateOne(t, fmt.Sprintf("%s: trace line %d", c.name, n), schemas, []string{traceSchema}, sc.Text())
		}
		f.Close()
		if n < 2 {
			t.Errorf("%s: the trace has %d lines", c.name, n)
		}
	}
	for path, ids := range outputs {
		for _, id := range ids {
			if !seen[path][id] {
				t.Errorf("no output of pablo %s was validated against %s", path, id)
			}
		}
	}
}

// validateOne validates one JSON document against the first of ids that
// accepts it and returns that ID; it also checks that the schema refuses
// the document with one undocumented member more, so the schema is closed.
func validateOne(t *testing.T, name string, schemas map[string]*jsonschema.Resolved, ids []string, doc string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Errorf("%s: not JSON: %v: %q", name, err, doc)
		return ""
	}
	var errs []string
	for _, id := range ids {
		err := schemas[id].Validate(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		if m, ok := v.(map[string]any); ok {
			m["undocumented"] = true
			if schemas[id].Validate(m) == nil {
				t.Errorf("%s: %s accepts an undocumented member", name, id)
			}
			delete(m, "undocumented")
		}
		return id
	}
	t.Errorf("%s: the output matches no schema of %v:\n%s\n%s", name, ids, strings.Join(errs, "\n"), doc)
	return ""
}

// TestTaskSchemaTellsNumbersFromStrings: the reference's completed example
// validates, and the same document with an integer accounting counter or a
// string outcome.usage does not.
func TestTaskSchemaTellsNumbersFromStrings(t *testing.T) {
	schemas, _ := loadSchemas(t)
	task := schemas["urn:pablo:cli:task-object"]
	const example = `{"schema_version":"c3.33","run_id":"r","session_id":"s","trace_id":"0af7651916cd43dd8448eb211c80319c",
"outcome":{"status":"completed","output":"…","finish_reason":"stop","usage":{"input_tokens":420,"output_tokens":82,
"cache_read_input_tokens":null,"cache_write_input_tokens":null}},"error":null,"accounting":{"model_calls":"1",
"tool_calls":"0","usage":{"input_tokens":"420","output_tokens":"82","cache_read_input_tokens":null,
"cache_write_input_tokens":null},"cost_microusd":null,"charged_tokens":null,"charged_cost_microusd":null}}`
	for _, c := range []struct {
		name, from, to string
		valid          bool
	}{
		{"the reference's example", "", "", true},
		{"an integer accounting counter", `"model_calls":"1"`, `"model_calls":1`, false},
		{"a non-canonical decimal", `"tool_calls":"0"`, `"tool_calls":"00"`, false},
		{"a string outcome usage", `"input_tokens":420`, `"input_tokens":"420"`, false},
		{"an error beside an outcome", `"error":null`, `"error":{"code":"invalid_arguments"}`, false},
	} {
		doc := strings.Replace(example, c.from, c.to, 1)
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		if err := task.Validate(v); (err == nil) != c.valid {
			t.Errorf("%s: valid %v, want %v (%v)", c.name, err == nil, c.valid, err)
		}
	}
}

// TestReadinessGoldensMatchTheirSchemas validates every JSON document of
// the readiness goldens (one deployment per readiness failure through
// doctor, why and graph) against its command's schemas.
func TestReadinessGoldensMatchTheirSchemas(t *testing.T) {
	schemas, fileOf := loadSchemas(t)
	outputs := jsonSchemas(t, fileOf)
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "readiness-*.txt"))
	if len(files) < 6 {
		t.Fatalf("%d readiness goldens, want one per readiness failure", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		steps := strings.Split(string(b), "\n$ ")
		n := 0
		for _, step := range steps {
			cmd, rest, _ := strings.Cut(strings.TrimPrefix(step, "$ "), "\n")
			path := strings.Fields(cmd)[0]
			if _, ok := outputs[path]; !ok {
				continue
			}
			_, out, _ := strings.Cut(rest, "--- stdout\n")
			out, _, _ = strings.Cut(out, "--- stderr")
			validateOne(t, f+": "+cmd, schemas, outputs[path], strings.TrimSpace(out))
			n++
		}
		if n != 3 {
			t.Errorf("%s: %d JSON outputs, want doctor, why and graph", f, n)
		}
	}
}
