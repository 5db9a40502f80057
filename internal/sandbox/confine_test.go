package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxedProcessHoldsNoCapability: read from inside the sandbox, the
// command's effective, permitted, inheritable and ambient capability sets
// and its bounding set are all empty, so nothing it executes (a setuid
// binary included) can gain one back.
func TestSandboxedProcessHoldsNoCapability(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	out, errOut, code, err := run(t, l, Profile{Filesystem: WorkspaceWrite}, t.TempDir(), `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status`)
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, stderr %q", code, err, errOut)
	}
	want := "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n"
	if out != want {
		t.Fatalf("capabilities read from inside:\n%s\nwant every set empty:\n%s", out, want)
	}
}

// TestReadOnlyWorkspaceRefusesEveryWrite: under the read-only scope the
// command reads the workspace but cannot change it: overwriting, creating
// and removing a file all fail with a read-only filesystem, and the host's
// files are as they were. The same script under workspace-write changes
// them, so what refuses the writes is the scope, not the files' modes.
func TestReadOnlyWorkspaceRefusesEveryWrite(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	script := `cat notes.txt; echo changed > notes.txt && echo overwrote; touch new.txt && echo created; rm -f doomed.txt && echo removed; true`
	for _, tc := range []struct {
		fs   Filesystem
		want string
	}{
		{ReadOnly, "original\n"},
		{WorkspaceWrite, "original\noverwrote\ncreated\nremoved\n"},
	} {
		ws := t.TempDir()
		if err := os.Chmod(ws, 0o777); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"notes.txt": "original\n", "doomed.txt": "x"} {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o666); err != nil {
				t.Fatal(err)
			}
		}
		out, errOut, code, err := run(t, l, Profile{Filesystem: tc.fs}, ws, script)
		if err != nil || code != 0 {
			t.Fatalf("%s: code %d, err %v, stderr %q", tc.fs, code, err, errOut)
		}
		if out != tc.want {
			t.Fatalf("%s: stdout %q, want %q (stderr %q)", tc.fs, out, tc.want, errOut)
		}
		if tc.fs != ReadOnly {
			continue
		}
		if n := strings.Count(errOut, "Read-only file system"); n != 3 {
			t.Errorf("%s: %d of 3 writes refused as a read-only filesystem; stderr %q", tc.fs, n, errOut)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "original\n" {
			t.Errorf("the host's file is %q after a read-only run", b)
		}
		if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
			t.Error("new.txt was created under the read-only scope")
		}
		if _, err := os.Stat(filepath.Join(ws, "doomed.txt")); err != nil {
			t.Errorf("doomed.txt was removed under the read-only scope: %v", err)
		}
	}
}
