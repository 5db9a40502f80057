package pablo

import (
	"context"
	"encoding/json"
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
