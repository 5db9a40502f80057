package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/ledger"
)

// TestLedgerReadCommandsNeverCreateAStore: show and recover open a store
// read-only; a missing one is an error (exit 2) and no file appears; extra
// positional arguments are refused.
func TestLedgerReadCommandsNeverCreateAStore(t *testing.T) {
	pablo := builtPablo(t)
	typo := filepath.Join(t.TempDir(), "typo.db")
	for _, sub := range []string{"show", "recover"} {
		code, out, errOut := pablo("ledger", sub, "--store", typo)
		if code != 2 || out != "" || !strings.Contains(errOut, "no ledger store at") {
			t.Errorf("ledger %s of a missing store: exit %d, stdout %q, stderr %q", sub, code, out, errOut)
		}
		if _, err := os.Stat(typo); !os.IsNotExist(err) {
			t.Fatalf("ledger %s created %s", sub, typo)
		}
	}
	store := filepath.Join(t.TempDir(), "ledger.db")
	if code, _, errOut := pablo("demo", "--store", store); code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	before, _ := os.ReadFile(store)
	if code, out, _ := pablo("ledger", "show", "--store", store); code != 0 || !strings.Contains(out, "completed") {
		t.Errorf("ledger show: exit %d, %q", code, out)
	}
	if code, _, _ := pablo("ledger", "recover", "--store", store); code != 0 {
		t.Errorf("ledger recover with nothing unknown: exit %d, want 0", code)
	}
	if after, _ := os.ReadFile(store); !bytes.Equal(before, after) {
		t.Error("a read command changed the store file")
	}
	if code, _, errOut := pablo("ledger", "show", "--store", store, "a", "b"); code != 2 || !strings.Contains(errOut, "at most one TASK_ID") {
		t.Errorf("extra arguments: exit %d, stderr %q", code, errOut)
	}
}

// TestLedgerTextSaysWhatJSONSays: an unknown outcome's text names the state
// and delivery the JSON report holds.
func TestLedgerTextSaysWhatJSONSays(t *testing.T) {
	report := ledger.Report{Tasks: []ledger.TaskReport{{TaskID: "t1", Unknown: []ledger.CallReport{
		{Kind: "tool", Name: "mcp/records/write", State: ledger.CallSettled, Class: outcome.ClassUnknown, Status: "timed_out", Delivery: outcome.MayHaveBeenSent},
		{Kind: "tool", Name: "shell.run", State: ledger.CallDispatched, Class: outcome.ClassUnknown},
	}}}}
	var out bytes.Buffer
	printReport(&host{stdout: &out}, report, true, true, nil)
	for _, want := range []string{"mcp/records/write        settled timed_out, delivery may_have_been_sent", "shell.run                dispatched, never settled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}

// TestLedgerShowPrintsEachSnapshot: ledger show prints each agent's
// dispatch snapshot, an entry a line with its deciding layer and rule, and
// says so when a record does not read back.
func TestLedgerShowPrintsEachSnapshot(t *testing.T) {
	snap := &ledger.Snapshot{Version: 1, Admitted: []ledger.SnapshotEntry{{ID: "tool:fs.read", Kind: "tool", Layer: "configuration", Rule: "builtin.configured", Attributes: map[string]string{"name": "fs_read"}}}}
	report := ledger.Report{Tasks: []ledger.TaskReport{{TaskID: "t1", RootAgentID: "root", Snapshots: []ledger.SnapshotReport{
		{AgentID: "root", Digest: ledger.ResultRef("sha256:" + strings.Repeat("a", 64)), Snapshot: snap},
		{AgentID: "child", Digest: ledger.ResultRef("sha256:" + strings.Repeat("b", 64)), Invalid: "ledger: dispatch snapshot: digest: the record was altered"},
	}}}}
	var out bytes.Buffer
	printReport(&host{stdout: &out}, report, true, true, nil)
	for _, want := range []string{
		"snapshot sha256:" + strings.Repeat("a", 64) + " of root agent, 1 admitted",
		`tool:fs.read                 tool        allowed by layer "configuration" rule "builtin.configured" name=fs_read`,
		"snapshot sha256:" + strings.Repeat("b", 64) + " of agent child INVALID: ledger: dispatch snapshot: digest: the record was altered",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}
