package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// TestPrivilegedDefaultsMatrix is docs/approvals.md's defaults matrix, one
// case per cell: which calls need approval with no approval rule at all,
// by tool class, sandbox and command policy.
func TestPrivilegedDefaultsMatrix(t *testing.T) {
	const literal = "[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"t.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\" }]\n"
	const off = "[options.shell.sandbox]\nmode = \"off\"\n"
	const network = "[options.shell.sandbox]\nnetwork = \"allow\"\n"
	shellArgs := json.RawMessage(`{"command":"ls","cwd":"."}`)
	cells := []struct {
		name   string
		extra  string
		tool   authority.ID
		args   json.RawMessage
		asks   bool
		reason string
	}{
		{"ShellSandboxedNoPolicy", "", authority.ShellRun, shellArgs, false, "the sandbox bounds it"},
		{"ShellSandboxedLiteralPolicy", literal, authority.ShellRun, shellArgs, false, "the sandbox and the policy bound it"},
		{"ShellSandboxedNetworkNoPolicy", network, authority.ShellRun, shellArgs, true, "the network leaves the sandbox"},
		{"ShellSandboxedNetworkLiteralPolicy", network + literal, authority.ShellRun, shellArgs, true, "the network leaves the sandbox"},
		{"ShellUnsandboxedNoPolicy", off, authority.ShellRun, shellArgs, true, "anything runs, touching anything"},
		{"ShellUnsandboxedLiteralPolicy", off + literal, authority.ShellRun, shellArgs, false, "the literal policy bounds what runs"},
		{"FSReadUnsandboxed", off, "fs.read", json.RawMessage(`{"path":"a.txt"}`), false, "a read inside the workspace"},
		{"ShellSandboxedClassRequired", "[options.approvals]\nshell = \"required\"\n", authority.ShellRun, shellArgs, true, "options.approvals.shell adds the question"},
		{"ShellUnsandboxedLiteralClassRequired", off + literal + "[options.approvals]\nshell = \"required\"\n", authority.ShellRun, shellArgs, true, "options.approvals.shell adds the question"},
		{"FSWriteClassRequired", "[options.approvals]\nfilesystem_write = \"required\"\n", "fs.write", json.RawMessage(`{"path":"a.txt","text":"x","expected_revision":null}`), true, "options.approvals.filesystem_write adds the question"},
		{"FSReadNotInTheWriteClass", "[options.approvals]\nfilesystem_write = \"required\"\n", "fs.read", json.RawMessage(`{"path":"a.txt"}`), false, "a read is not a write"},
		{"FSWriteUnsandboxed", off, "fs.write", json.RawMessage(`{"path":"a.txt","text":"x","expected_revision":null}`), false, "a confined write with an expected revision"},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			doc := "schema_version = 1\n[options.filesystem]\nwrite = true\n[options.shell]\nenabled = true\n" + c.extra
			d, err := loadString(t, doc)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := d.Decide(context.Background(), c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if !dec.Allowed {
				t.Fatalf("%s denied: %+v", c.tool, dec)
			}
			if dec.NeedsApproval != c.asks {
				t.Errorf("%s needs approval %v, want %v (%s): %+v", c.tool, dec.NeedsApproval, c.asks, c.reason, dec)
			}
		})
	}
}

// TestApprovalClassesOnlyAdd: options.approvals takes "required" and
// nothing else, so a deployment can add a question but never write one
// away; any other value, or an unknown class, is a config error naming the
// key.
func TestApprovalClassesOnlyAdd(t *testing.T) {
	for _, body := range []string{
		"[options.approvals]\nshell = \"never\"\n",
		"[options.approvals]\nshell = \"optional\"\n",
		"[options.approvals]\nfs_read = \"required\"\n",
		"[options.approvals]\nshell = true\n",
	} {
		_, err := loadString(t, "schema_version = 1\n"+body)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "approvals") {
			t.Errorf("%q: err %v, want a config error naming options.approvals", body, err)
		}
	}
	if _, err := loadString(t, "schema_version = 1\n[options.approvals]\nshell = \"required\"\nmcp = \"required\"\nsubagent = \"required\"\nfilesystem_write = \"required\"\n"); err != nil {
		t.Fatal(err)
	}
}
