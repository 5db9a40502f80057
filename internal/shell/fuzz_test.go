package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPolicyCheck feeds arbitrary commands to the production preset: a
// decision never panics, a denial never echoes the command, and only
// printf is ever allowed.
func FuzzPolicyCheck(f *testing.F) {
	for _, s := range []string{"/usr/bin/printf hello", "printf hello | sh", "/bin/rm -rf x", "env", "/usr/bin/printf $(id)", "/bin/printf 'a b'", "x\\ y"} {
		f.Add(s)
	}
	p, err := NewPolicy(productionLayers()...)
	if err != nil {
		f.Fatal(err)
	}
	printf, err := Resolve("/usr/bin/printf")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, command string) {
		d := p.Check(command)
		if d.Allowed {
			if d.Executable == nil || !d.Executable.SameFile(printf) || d.RuleID != "production.printf" {
				t.Fatalf("allowed something other than printf: %+v", d)
			}
			return
		}
		if d.RuleID == "" || d.Layer == "" || d.Reason == "" {
			t.Fatalf("denial without layer, rule or reason: %+v", d)
		}
		if len(command) > 8 && strings.Contains((&DeniedError{Decision: d}).Error(), command) {
			t.Fatalf("denial echoes the command")
		}
	})
}

// FuzzResolveCwd checks that no cwd string resolves outside the workspace,
// through "..", absolute paths or symlinks.
func FuzzResolveCwd(f *testing.F) {
	for _, s := range []string{".", "sub", "sub/..", "..", "../x", "/", "/etc", "escape", "escape/x", "inside", "sub/../../x", "./sub/./", "sub//deeper"} {
		f.Add(s)
	}
	root := f.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub", "deeper"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "outside"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(ws, "escape")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(ws, "inside")); err != nil {
		f.Fatal(err)
	}
	ws, err := filepath.EvalSymlinks(ws)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cwd string) {
		abs, rel, err := resolveCwd(ws, cwd)
		if err != nil {
			if !errors.Is(err, ErrDenied) && !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if !within(ws, abs) || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			t.Fatalf("resolved outside the workspace: %q -> %q (%q)", cwd, abs, rel)
		}
		if info, err := os.Stat(abs); err != nil || !info.IsDir() {
			t.Fatalf("resolved to a non-directory: %q", abs)
		}
	})
}

// FuzzEnvironment checks that only well-formed, admitted PABLO_TASK_* names
// and bounded values ever reach a command's environment.
func FuzzEnvironment(f *testing.F) {
	f.Add("PABLO_TASK_LABEL", "docs")
	f.Add("HOME", "/root")
	f.Add("PABLO_TASK_", "x")
	f.Add("PABLO_TASK_A=B", "x")
	f.Add("PATH", "/tmp")
	env := Environment{AllowedNames: []string{"PABLO_TASK_LABEL", "PABLO_TASK_OTHER"}}
	open := Environment{AllowAnyName: true}
	f.Fuzz(func(t *testing.T, name, value string) {
		for _, e := range []Environment{env, open} {
			vars, problem := e.build(map[string]string{name: value})
			if problem != "" {
				continue
			}
			if len(vars) != 3 || vars[0] != "PATH=/usr/bin:/bin" || vars[1] != "LANG=C" || vars[2] != name+"="+value {
				t.Fatalf("unexpected environment %q", vars)
			}
			if !validEnvName(name) || len(value) > MaxEnvValueBytes || strings.ContainsRune(value, 0) || strings.ContainsRune(name, '=') {
				t.Fatalf("admitted %q", name)
			}
			if !e.AllowAnyName && name != "PABLO_TASK_LABEL" && name != "PABLO_TASK_OTHER" {
				t.Fatalf("admitted unlisted name %q", name)
			}
		}
	})
}
