package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIAddsBindFlagSpelling: the CLI, not the library, tells the user
// which flag gives a missing binding.
func TestCLIAddsBindFlagSpelling(t *testing.T) {
	code, out, errOut := cli(t, "run", "x", "--config", filepath.Join("demo", "deployment.toml"), "--bind", "workspace="+filepath.Join("demo", "work"))
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errOut, `binding "skills" is not given (give it with --bind skills=DIR)`) {
		t.Errorf("stderr: %q", errOut)
	}
}
