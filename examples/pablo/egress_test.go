package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// TestRunUnderAllowlistReachesTheAllowedNameOnly runs `pablo run` with
// shell.run under network allowlist, the CLI's own test binary as the
// forwarder: curl reaches the allowed loopback fixture by name through
// the proxy and the call completes; the same server by IP literal is
// refused and the call fails. Each of the proxy's decisions is its call's
// tool.egress event in the trace, as it was made, and a decision record
// of the ledger with the host, port, verdict and rule.
func TestRunUnderAllowlistReachesTheAllowedNameOnly(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs /usr/bin/curl")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fixture-body") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("schema_version = 1\n[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"allowlist\"\nallow = [\"localhost:%d\"]\n", port)), 0o600)
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(fmt.Sprintf(`{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"curl -fsS http://localhost:%d/","cwd":"."}},{"id":"c2","name":"shell_run","arguments":{"command":"curl -fsS http://127.0.0.1:%[1]d/","cwd":"."}}]},{"text":["done"]}]}`, port)), 0o600)
	store := filepath.Join(dir, "ledger.db")
	trace := filepath.Join(dir, "trace.jsonl")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir, forwarder: exe}
	if code := run(context.Background(), []string{"run", "go", "--json", "--script", script, "--store", store, "--trace", trace, "--config", cfg, "--bind", "workspace=" + ws}, h); code != 0 {
		t.Fatalf("run: exit %d %s %s", code, out.String(), errb.String())
	}
	_, rec, _ := cli(t, "ledger", "recover", "--store", store, "--json")
	var rep struct {
		Tasks []struct {
			Completed []recordedCall `json:"completed"`
		} `json:"tasks"`
	}
	if json.Unmarshal([]byte(rec), &rep) != nil || len(rep.Tasks) != 1 {
		t.Fatalf("recover: %s", rec)
	}
	status := map[string]string{}
	for _, c := range rep.Tasks[0].Completed {
		status[c.CallID] = c.Status
	}
	// curl -f exits 22 on the proxy's 403: a recoverable error.
	if status["call_1_1"] != "completed" || status["call_1_2"] != "recoverable_error" {
		t.Fatalf("calls %v, want the allowed name completed and the IP literal refused", status)
	}

	// The trace: one tool.egress event per decision, in its call, before
	// the call's tool.finished.
	type egressEvent struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
		Egress *struct {
			Host    string `json:"host"`
			Port    int    `json:"port"`
			Allowed bool   `json:"allowed"`
			Rule    string `json:"rule"`
			Reason  string `json:"reason"`
		} `json:"egress"`
	}
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var events []egressEvent
	finished := map[string]bool{}
	schemas, _ := loadSchemas(t)
	for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		// Every line, tool.egress among them, is what the trace schema says.
		validateOne(t, fmt.Sprintf("trace line %d", i+1), schemas, []string{traceSchema}, string(line))
		var e egressEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("trace line %s: %v", line, err)
		}
		switch e.Type {
		case "tool.finished":
			finished[e.CallID] = true
		case "tool.egress":
			if finished[e.CallID] {
				t.Errorf("tool.egress of %s after its tool.finished", e.CallID)
			}
			events = append(events, e)
		}
	}
	rule := fmt.Sprintf("localhost:%d", port)
	if len(events) != 2 || events[0].CallID != "call_1_1" || events[0].Name != "shell.run" || events[0].Egress == nil ||
		events[0].Egress.Host != "localhost" || events[0].Egress.Port != port || !events[0].Egress.Allowed || events[0].Egress.Rule != rule ||
		events[1].CallID != "call_1_2" || events[1].Egress == nil || events[1].Egress.Host != "127.0.0.1" || events[1].Egress.Allowed || events[1].Egress.Reason == "" {
		t.Errorf("tool.egress events %+v, want the allowed name in call_1_1 and the refused IP literal in call_1_2", events)
	}

	// The ledger: a decision record per decision, layer sandbox.network.
	l, err := ledger.OpenBolt(store, ledger.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tasks, err := l.Tasks(context.Background())
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	recs, err := l.Records(context.Background(), tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	// `pablo ledger show --json` of the task, its egress decisions among
	// its records, is what its schema says.
	_, show, _ := cli(t, "ledger", "show", tasks[0], "--store", store, "--json")
	if !strings.Contains(show, `"egress"`) {
		t.Errorf("ledger show does not show the egress decisions: %s", show)
	}
	validateOne(t, "ledger show", schemas, []string{"urn:pablo:cli:ledger-report"}, show)
	var got []authority.Decision
	for _, r := range recs {
		if r.Kind == ledger.RecordDecision && r.Decision.Decision.Egress != nil {
			if r.Decision.Capability != "shell.run" {
				t.Errorf("egress decision recorded for %q, want shell.run", r.Decision.Capability)
			}
			got = append(got, r.Decision.Decision)
		}
	}
	if len(got) != 2 || !got[0].Allowed || got[0].Layer != authority.LayerEgress || got[0].RuleID != rule || got[0].Egress.Port != port ||
		got[1].Allowed || got[1].RuleID != authority.RuleEgressUnlisted || got[1].Egress.Host != "127.0.0.1" {
		t.Errorf("ledger egress decisions %+v, want the allowed name by its rule, then the IP literal refused", got)
	}
}

// TestRunUnderRepositoryHostOnlyReachesTheRemotesHost runs `pablo run`
// with shell.run under network repository-host-only in a workspace that
// is a git repository whose one remote is a loopback fixture by name:
// curl reaches that host through the proxy; a second fixture, no remote's
// host, is refused; the task's snapshot records the allowlist read from
// the remotes, and every trace line is what the trace schema says.
func TestRunUnderRepositoryHostOnlyReachesTheRemotesHost(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs /usr/bin/curl")
	}
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "remote-body") }))
	defer remote.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "other-body") }))
	defer other.Close()
	port, otherPort := remote.Listener.Addr().(*net.TCPAddr).Port, other.Listener.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	repo, err := git.PlainInit(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{fmt.Sprintf("http://localhost:%d/team/repo.git", port)}}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"repository-host-only\"\n"), 0o600)
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(fmt.Sprintf(`{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"curl -fsS http://localhost:%d/","cwd":"."}},{"id":"c2","name":"shell_run","arguments":{"command":"curl -fsS http://localhost:%d/","cwd":"."}}]},{"text":["done"]}]}`, port, otherPort)), 0o600)
	store := filepath.Join(dir, "ledger.db")
	trace := filepath.Join(dir, "trace.jsonl")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir, forwarder: exe}
	if code := run(context.Background(), []string{"run", "go", "--json", "--script", script, "--store", store, "--trace", trace, "--config", cfg, "--bind", "workspace=" + ws}, h); code != 0 {
		t.Fatalf("run: exit %d %s %s", code, out.String(), errb.String())
	}
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	schemas, _ := loadSchemas(t)
	for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		validateOne(t, fmt.Sprintf("trace line %d", i+1), schemas, []string{traceSchema}, string(line))
	}
	l, err := ledger.OpenBolt(store, ledger.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tasks, err := l.Tasks(context.Background())
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	recs, err := l.Records(context.Background(), tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	rule := fmt.Sprintf("localhost:%d", port)
	var snapshot string
	status := map[string]string{}
	var decided []authority.EgressDecision
	for _, r := range recs {
		switch {
		case r.Kind == ledger.RecordSnapshot:
			snapshot = r.Snapshot.Snapshot
		case r.Kind == ledger.RecordCall && r.Call.State == ledger.CallSettled:
			status[r.Call.CallID] = r.Call.Status
		case r.Kind == ledger.RecordDecision && r.Decision.Decision.Egress != nil:
			decided = append(decided, *r.Decision.Decision.Egress)
		}
	}
	if !strings.Contains(snapshot, "network=allowlist allow="+rule+" from=repository-remotes") {
		t.Errorf("snapshot %s does not record the remotes' allowlist", snapshot)
	}
	if status["call_1_1"] != "completed" || status["call_1_2"] != "recoverable_error" {
		t.Errorf("calls %v, want the remote's host reached and the other refused", status)
	}
	if len(decided) != 2 || !decided[0].Allowed || decided[0].Rule != rule || decided[1].Allowed || decided[1].Port != otherPort {
		t.Errorf("egress decisions %+v", decided)
	}
}
