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
	printReport(&host{stdout: &out}, report, true, nil)
	for _, want := range []string{"mcp/records/write        settled timed_out, delivery may_have_been_sent", "shell.run                dispatched, never settled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}
