package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/ledger"
)

// The goldens under testdata/golden were captured on the code before the
// package layout changed (issue 14) and are never regenerated to make a
// change pass: a layout change that alters any byte of what the CLI prints,
// on the demo or the presets, is a behaviour change. To add a case, add it
// at the end of goldenCases and run with PABLO_ADD_GOLDEN=1, which writes
// only the goldens that do not exist yet.

// goldenCase is one command line. Its arguments may name "$TMP" (the
// case's scratch directory, shared by the steps of one case) and "$PRESETS"
// and "$EXAMPLES" (the original's files, kept under testdata/reference at the
// repository's root).
type goldenCase struct {
	name  string
	steps [][]string
}

func goldenCases() []goldenCase {
	demo := []string{"--config", "demo/deployment.toml", "--bind", "workspace=demo/work", "--bind", "skills=demo/skills"}
	prod := []string{"--config", "$PRESETS/production.toml", "--bind", "workspace=$TMP", "--bind", "preset=$PRESETS"}
	dev := []string{"--config", "$PRESETS/development.toml", "--bind", "workspace=$TMP", "--bind", "preset=$PRESETS"}
	vercel := []string{"--config", "$EXAMPLES/vercel.toml", "--bind", "workspace=$TMP"}
	responses := []string{"--config", "$EXAMPLES/open-responses.toml", "--bind", "workspace=$TMP"}
	with := func(cmd []string, args ...[]string) []string {
		out := append([]string(nil), cmd...)
		for _, a := range args {
			out = append(out, a...)
		}
		return out
	}
	cases := []goldenCase{
		{"demo-text", [][]string{{"demo"}}},
		{"demo-json", [][]string{{"demo", "--json"}}},
		{"demo-run-store", [][]string{
			with([]string{"run", "When was invoice INV-1042 paid?", "--json", "--script", "demo/script.json", "--store", "$TMP/ledger.db", "--trace", "$TMP/trace.jsonl"}, demo),
			{"ledger", "show", "--store", "$TMP/ledger.db"},
			{"ledger", "show", "--json", "--store", "$TMP/ledger.db"},
			{"ledger", "recover", "--store", "$TMP/ledger.db"},
			{"ledger", "recover", "--json", "--store", "$TMP/ledger.db"},
			{"cat", "$TMP/trace.jsonl"},
		}},
		{"demo-run-text", [][]string{with([]string{"run", "When was invoice INV-1042 paid?", "--script", "demo/script.json"}, demo)}},
		{"help", [][]string{{"--help"}, {"run", "--help"}, {"ledger"}, {"help", "policy", "check"}}},
	}
	for _, d := range []struct {
		name string
		args []string
	}{{"demo", demo}, {"production", prod}, {"development", dev}, {"vercel", vercel}, {"open-responses", responses}} {
		cases = append(cases,
			goldenCase{d.name + "-config", [][]string{
				with([]string{"config", "validate"}, d.args),
				with([]string{"config", "validate", "--json"}, d.args),
				with([]string{"config", "explain"}, d.args),
				with([]string{"config", "render"}, d.args),
			}},
			goldenCase{d.name + "-policy", [][]string{
				with([]string{"policy", "check", "fs.read"}, d.args),
				with([]string{"policy", "check", "--json", "fs.write"}, d.args),
				with([]string{"policy", "check", "--json", "shell.run"}, d.args),
				with([]string{"policy", "check", "--json", "--shell", "/usr/bin/printf hello"}, d.args),
				with([]string{"policy", "check", "--shell", "/bin/rm -rf x"}, d.args),
				with([]string{"policy", "check", "--json", "mcp/evidence/read_evidence"}, d.args),
				with([]string{"policy", "check", "mcp/evidence/delete_evidence"}, d.args),
				with([]string{"policy", "check", "--json", "mcp/ghost/read_evidence"}, d.args),
				with([]string{"policy", "check", "--json", "skill.read"}, d.args),
			}},
			goldenCase{d.name + "-doctor", [][]string{
				with([]string{"doctor"}, d.args),
				with([]string{"doctor", "--json"}, d.args),
			}},
			goldenCase{d.name + "-skills", [][]string{
				with([]string{"skills", "list"}, d.args),
				with([]string{"skills", "list", "--json"}, d.args),
				with([]string{"skills", "show", "team/evidence-review"}, d.args),
				with([]string{"skills", "show", "--json", "team/evidence-review"}, d.args),
				with([]string{"skills", "show", "preset/evidence"}, d.args),
				with([]string{"skills", "show", "--json", "preset/evidence"}, d.args),
			}},
		)
	}
	cases = append(cases,
		goldenCase{"config-errors", [][]string{
			{"write", "$TMP/bad.toml", "schema_version = 1\n[options.shell]\nenabeld = true\n"},
			{"config", "validate", "--config", "$TMP/bad.toml", "--bind", "workspace=$TMP"},
			{"config", "validate", "--json", "--config", "$TMP/bad.toml", "--bind", "workspace=$TMP"},
			{"write", "$TMP/float.toml", "schema_version = 1\n[options.limits]\nmax_tool_calls = 1.5\n"},
			{"config", "validate", "--config", "$TMP/float.toml", "--bind", "workspace=$TMP"},
			{"write", "$TMP/secret.toml", "schema_version = 1\n[credentials.x]\nconsumer = \"provider.openrouter\"\nvalue = \"sk-inline\"\n"},
			{"config", "validate", "--json", "--config", "$TMP/secret.toml", "--bind", "workspace=$TMP"},
			{"write", "$TMP/rel.toml", "schema_version = 1\n[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"records-server\"\n"},
			{"config", "validate", "--config", "$TMP/rel.toml", "--bind", "workspace=$TMP"},
			{"run", "x", "--json", "--config", "$TMP/missing.toml"},
		}},
	)
	// One deployment per readiness failure of the capability graph, each
	// through doctor, why and graph.
	const model = "[options.model]\nprovider = \"openai_compatible\"\nid = \"m\"\nendpoint = \"https://models.example/v1/chat/completions\"\n"
	const off = "[options.shell]\nenabled = false\n"
	const server = "[options.mcp.servers.records]\ntransport = \"http\"\nurl = \"https://mcp.example.com/mcp\"\nrequired = true\n"
	readiness := func(name, doc, capability string, probe bool) goldenCase {
		var doctorProbe, probeFlag []string
		if probe {
			doctorProbe, probeFlag = []string{"--probe", "mcp"}, []string{"--probe"}
		}
		args := []string{"--config", "$TMP/" + name + ".toml", "--bind", "workspace=$TMP", "--bind", "skills=$TMP/skills"}
		return goldenCase{"readiness-" + name, [][]string{
			{"write", "$TMP/" + name + ".toml", "schema_version = 1\n" + doc},
			{"write", "$TMP/skills/review/SKILL.md", "---\nname: review\ndescription: Review things.\nallowed-tools: fs.write mcp/records/lookup\n---\nYou have been granted write access.\n"},
			with([]string{"doctor", "--json"}, args, doctorProbe),
			with([]string{"why", "--json", capability}, args, probeFlag),
			with([]string{"graph", "--json"}, args, probeFlag),
		}}
	}
	// A host without bubblewrap: the step "bubblewrap PATH" makes the
	// host check sandboxes with PATH, which does not exist.
	missingSandbox := readiness("missing-sandbox", model+"[options.shell]\nenabled = true\n", "shell.run", false)
	missingSandbox.steps = append([][]string{{"bubblewrap", "/nonexistent/bwrap"}}, missingSandbox.steps...)
	skills := "[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \".\" }\n"
	cases = append(cases,
		readiness("missing-credential", model+off+server+"[options.mcp.servers.records.headers]\nauthorization = \"records\"\n[credentials.records]\nconsumer = \"mcp.headers\"\nsources = [{ kind = \"environment\", name = \"PABLO_GOLDEN_ABSENT\" }]\n", "records", false),
		readiness("denied-server", model+off+server+"[[options.mcp.policies]]\n[options.mcp.policies.servers]\ndefault = \"allow\"\ndeny = [{ id = \"no.records\", value = \"records\" }]\n", "mcp/records/lookup", false),
		readiness("unhealthy-server", model+off+"[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"/nonexistent/records-server\"\nstartup_timeout_ms = 5000\n", "records", true),
		readiness("skill-unadmitted-tool", model+off+skills, "team/review", false),
		readiness("unsatisfiable-route", "[options.shell]\nenabled = false\n[options.models.first]\nprovider = \"vercel\"\nid = \"a\"\ncredential = \"gw\"\ncapabilities = { tool_calls = false }\n[options.models.second]\nprovider = \"openrouter\"\nid = \"b\"\ncredential = \"or\"\n[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n[options]\nmodel_route = \"main\"\n[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"PABLO_GOLDEN_ABSENT\" }]\n[credentials.or]\nconsumer = \"provider.openrouter\"\nsources = [{ kind = \"environment\", name = \"PABLO_GOLDEN_ABSENT\" }]\n", "main", false),
		missingSandbox,
		readiness("approval-gated", model+"[options.shell]\nenabled = false\n[options.filesystem]\nwrite = true\n"+server+"[options.approvals]\nmcp = \"required\"\n[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\nallow = [{ id = \"ops.write\", value = \"fs.write\", approval = \"required\" }, { id = \"ops.read\", value = \"fs.read\" }, { id = \"ops.lookup\", value = \"mcp/records/lookup\" }]\n", "fs.write", false),
		// Another kind's Skill is denied task_kind_mismatch, and why
		// exits 1 for it as for any denial; the task's kind's exits 0.
		goldenCase{"why-task-kind", [][]string{
			{"write", "$TMP/kind.toml", "schema_version = 1\n" + model + off + "[options.skills]\nactivate = [\"team/triage\"]\n" + skills},
			{"write", "$TMP/skills/triage/SKILL.md", "---\nname: triage\ndescription: Triage things.\nmetadata:\n  task-kinds: triage\n---\nTriage.\n"},
			{"why", "team/triage", "--kind", "review", "--config", "$TMP/kind.toml", "--bind", "workspace=$TMP", "--bind", "skills=$TMP/skills"},
			{"why", "--json", "team/triage", "--kind", "review", "--config", "$TMP/kind.toml", "--bind", "workspace=$TMP", "--bind", "skills=$TMP/skills"},
			{"why", "team/triage", "--kind", "triage", "--config", "$TMP/kind.toml", "--bind", "workspace=$TMP", "--bind", "skills=$TMP/skills"},
		}},
		readiness("rule-example-fails", model+"[options.shell]\nenabled = true\n[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"t.printf\", executable = \"/usr/bin/printf\", args = [\"status\"], match = \"prefix\", examples = { match = [\"/usr/bin/printf push\"] } }]\n", "shell.run", false),
	)
	return cases
}

// TestCLIOutputsAreByteIdentical runs every golden case in-process with a
// fixed clock and a sequential ID source and compares each step's exit code,
// stdout and stderr with the golden.
func TestCLIOutputsAreByteIdentical(t *testing.T) {
	presetsDir, _ := filepath.Abs(presets)
	examplesDir, _ := filepath.Abs(filepath.Join(originals, "examples"))
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			wd, _ := os.Getwd()
			got := runGolden(t, c, map[string]string{"$TMP": tmp, "$PRESETS": presetsDir, "$EXAMPLES": examplesDir, "$WD": wd})
			path := filepath.Join("testdata", "golden", c.name+".txt")
			want, err := os.ReadFile(path)
			if os.IsNotExist(err) && os.Getenv("PABLO_ADD_GOLDEN") == "1" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("the CLI's output changed (%s):\n%s", path, firstDifference(string(want), got))
			}
		})
	}
}

// demoDir matches the demo command's fresh temporary workspace.
var demoDir = regexp.MustCompile(`/[^\s"']*/pablo-demo-[0-9]+`)

// runGolden runs a case's steps and renders them as one document.
func runGolden(t *testing.T, c goldenCase, vars map[string]string) string {
	t.Helper()
	var doc strings.Builder
	expand := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, k, v)
		}
		return s
	}
	hide := func(s string) string {
		for _, k := range []string{"$TMP", "$PRESETS", "$EXAMPLES", "$WD"} {
			s = strings.ReplaceAll(s, vars[k], k)
		}
		return demoDir.ReplaceAllString(s, "$$DEMO")
	}
	// One clock and one ID series per case: a store written by one step and
	// read by the next agrees on both.
	start := time.Date(2100, 1, 2, 3, 4, 5, 0, time.UTC) // after any real deadline: tasks run
	var seq ids.Sequential
	var reads atomic.Int64
	now := countingClock{at: start, reads: &reads}
	bubblewrap := ""
	for _, step := range c.steps {
		args := make([]string, len(step))
		for i, a := range step {
			args[i] = expand(a)
		}
		fmt.Fprintf(&doc, "$ %s\n", hide(strings.Join(step, " ")))
		switch args[0] {
		case "write":
			os.MkdirAll(filepath.Dir(args[1]), 0o700)
			if err := os.WriteFile(args[1], []byte(args[2]), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		case "bubblewrap":
			bubblewrap = args[1]
			continue
		case "cat":
			b, err := os.ReadFile(args[1])
			if err != nil {
				t.Fatal(err)
			}
			doc.WriteString(hide(string(b)))
			continue
		}
		var out, errb bytes.Buffer
		wd, _ := os.Getwd()
		code := run(context.Background(), args, &host{
			stdout: &out, stderr: &errb,
			lookupEnv: func(string) (string, bool) { return "", false },
			workDir:   wd, clock: now, newID: seq.NewID, bubblewrap: bubblewrap,
		})
		fmt.Fprintf(&doc, "exit %d\n--- stdout\n%s--- stderr\n%s", code, hide(out.String()), hide(errb.String()))
	}
	return doc.String()
}

// firstDifference shows the first line where want and got differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, wl, gl)
		}
	}
	return "(only in length)"
}

// countingClock always reads one time and counts the reads.
type countingClock struct {
	at    time.Time
	reads *atomic.Int64
}

func (c countingClock) Now() time.Time { c.reads.Add(1); return c.at }

func (countingClock) AfterFunc(d time.Duration, f func()) ledger.Timer { return time.AfterFunc(d, f) }
