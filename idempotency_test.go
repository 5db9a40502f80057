package pablo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// TestIdempotencyKeyIsStableAndPerCall: the key is a function of task,
// agent and call ID alone (a retried delivery carries the same key), and
// any one of them changing changes it.
func TestIdempotencyKeyIsStableAndPerCall(t *testing.T) {
	k := IdempotencyKey("task", "agent", "c1")
	if k != IdempotencyKey("task", "agent", "c1") || !strings.HasPrefix(k, "idem_") || len(k) != len("idem_")+32 {
		t.Fatalf("key %q is not stable", k)
	}
	for _, other := range []string{IdempotencyKey("task2", "agent", "c1"), IdempotencyKey("task", "agent2", "c1"),
		IdempotencyKey("task", "agent", "c2"), IdempotencyKey("taska", "gent", "c1")} {
		if other == k {
			t.Errorf("a different call has the key %q", k)
		}
	}
}

// TestCallKeysAreTheDocumentedDigestInOneAllocation: the idempotency key
// and the approval request ID are their prefix and the hex of the first 16
// bytes of SHA-256 over their parts, each followed by a NUL byte, for IDs
// of any length; every tool call derives a key, so for IDs of ordinary
// length that string is the one allocation.
func TestCallKeysAreTheDocumentedDigestInOneAllocation(t *testing.T) {
	want := func(prefix string, parts ...string) string {
		var b []byte
		for _, p := range parts {
			b = append(append(b, p...), 0)
		}
		sum := sha256.Sum256(b)
		return prefix + hex.EncodeToString(sum[:16])
	}
	long := strings.Repeat("x", 300)
	for _, ids := range [][3]string{{"task", "agent", "c1"}, {long, "agent", long}} {
		if got, w := IdempotencyKey(ids[0], ids[1], ids[2]), want("idem_", ids[:]...); got != w {
			t.Errorf("IdempotencyKey = %q, want %q", got, w)
		}
		if got, w := approval.RequestID(ids[0], ids[1], ids[2], "sha256:ab"), want("apr_", ids[0], ids[1], ids[2], "sha256:ab"); got != w {
			t.Errorf("approval.RequestID = %q, want %q", got, w)
		}
	}
	task, agent, call := "0193b0a2-8c4e-7d1a-9f3b-2a6c1e5d7f90", "root", "call_0001"
	if n := testing.AllocsPerRun(100, func() { _ = IdempotencyKey(task, agent, call) }); n != 1 && !raceEnabled {
		t.Errorf("IdempotencyKey allocates %v times, want 1", n)
	}
}

// TestSideEffectsCarryTheirIdempotencyKey: shell.run gets the call's key in
// PABLO_IDEMPOTENCY_KEY and an MCP tools/call in _meta under
// mcp.IdempotencyMetaKey, the same key pablo.IdempotencyKey derives from
// the task, the agent and the call ID.
func TestSideEffectsCarryTheirIdempotencyKey(t *testing.T) {
	fault := buildFaultServer(t)
	for _, tc := range []struct{ name, body, call string }{
		{"Shell", "[options.shell]\nenabled = true\n", `{"name":"shell_run","arguments":{"command":"printenv PABLO_IDEMPOTENCY_KEY","cwd":"."}}`},
		{"MCP", mcpServerTOML(fault, "ok", ""), `{"name":"` + mcp.Alias(authority.MCPTool("records", "echo")) + `","arguments":{"message":"hi"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			script := `{"turns":[{"tool_calls":[{"id":"c1",` + tc.call[1:] + `]},{"text":["done"]}]}`
			rt, err := scriptDeployment(t, dir, ws, script, tc.body).NewRuntime(context.Background(), HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			obj, events := runTask(t, rt, "go")
			if obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("outcome %+v", obj.Outcome)
			}
			var result, agent string
			for _, e := range events {
				if e.Type == event.ToolFinished && e.CallID == "call_1_1" {
					result, agent = string(e.Result), e.Agent.AgentID
				}
			}
			want := IdempotencyKey(*obj.RunID, agent, "call_1_1")
			if !strings.Contains(result, want) {
				t.Errorf("result %s does not carry the key %s", result, want)
			}
		})
	}
}

// TestRetriedCallCarriesTheSameKeyAfterARestart: a call's key is on its
// admission record, and a retried delivery of the same call (the same
// task and call ID, after the host restarted on the same store's IDs)
// hands the script the same key the ledger recorded the first time.
func TestRetriedCallCarriesTheSameKeyAfterARestart(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"printenv PABLO_IDEMPOTENCY_KEY","cwd":"."}}]},{"text":["done"]}]}`
	d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = true\n")
	// run is one host's life: a runtime over a bolt store at path whose
	// IDs are the same deterministic series every time.
	run := func(path string) (taskID, seen string) {
		store, err := ledger.OpenBolt(path, ledger.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		n := 0
		rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store, NewID: func() string { n++; return "id-" + strconv.Itoa(n) }})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		obj, events := runTask(t, rt, "go")
		if obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("outcome %+v", obj.Outcome)
		}
		for _, e := range events {
			if e.Type == event.ToolFinished && e.CallID == "call_1_1" {
				var res struct {
					Shell struct {
						Stdout string `json:"stdout"`
					} `json:"shell"`
				}
				json.Unmarshal(e.Result, &res)
				seen = strings.TrimSpace(res.Shell.Stdout)
			}
		}
		return *obj.RunID, seen
	}
	first := filepath.Join(dir, "first.db")
	task, key := run(first)
	if !strings.HasPrefix(key, "idem_") {
		t.Fatalf("the script saw the key %q", key)
	}
	// After the restart, the ledger alone says which key the call carried.
	store, err := ledger.OpenBolt(first, ledger.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	report, err := ledger.RecoverTask(context.Background(), store, task)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	var recorded string
	for _, c := range report.Completed {
		if c.CallID == "call_1_1" {
			recorded = c.IdempotencyKey
		}
	}
	if recorded != key {
		t.Fatalf("the ledger recorded the key %q, the script saw %q", recorded, key)
	}
	// The same call delivered again carries the same key.
	again, retried := run(filepath.Join(dir, "second.db"))
	if again != task || retried != key {
		t.Fatalf("the retried call of task %s carried %q, the first delivery (task %s) %q", again, retried, task, key)
	}
}
