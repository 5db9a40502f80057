package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const (
	readmePath = "../../README.md"
	cliBegin   = "<!-- cli:begin: generated from examples/pablo/commands.go; PABLO_UPDATE_README=1 go test ./examples/pablo -run TestReadmeCLITablesMatchTheParser rewrites it -->"
	cliEnd     = "<!-- cli:end -->"
)

// TestReadmeCLITablesMatchTheParser: the README's CLI tables are the
// parser's own table, so what the README promises is what the CLI takes.
func TestReadmeCLITablesMatchTheParser(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin, end := strings.Index(readme, cliBegin), strings.Index(readme, cliEnd)
	if begin < 0 || end < begin {
		t.Fatalf("the README has no %q … %q section", cliBegin, cliEnd)
	}
	want := cliBegin + "\n" + cliMarkdown() + cliEnd
	got := readme[begin : end+len(cliEnd)]
	if got == want {
		return
	}
	if os.Getenv("PABLO_UPDATE_README") == "1" {
		if err := os.WriteFile(readmePath, []byte(readme[:begin]+want+readme[end+len(cliEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the README's CLI section differs from the command table; run PABLO_UPDATE_README=1 go test ./examples/pablo -run %s\n--- README\n%s\n--- table\n%s", t.Name(), got, want)
}

// cliMarkdown renders the command table as the README shows it.
func cliMarkdown() string {
	var b strings.Builder
	b.WriteString("\n| Command | What it does |\n|---|---|\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", strings.TrimSpace("pablo "+c.path+" "+c.args), c.summary)
	}
	b.WriteString("\nEvery command answers `--help` and `-h` with its synopsis and flags (stdout, exit 0).\n")
	b.WriteString("\nThe deployment flags, taken by every command that loads a deployment:\n\n")
	flagTable(&b, deploymentFlags())
	for _, c := range commands() {
		if len(c.flags) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n`pablo %s`", c.path)
		if c.deployment {
			b.WriteString(" (and the deployment flags)")
		}
		b.WriteString(":\n\n")
		flagTable(&b, c.flags)
	}
	b.WriteString("\n")
	return b.String()
}

func flagTable(b *strings.Builder, flags []flag) {
	b.WriteString("| Flag | What it does |\n|---|---|\n")
	for _, f := range flags {
		fmt.Fprintf(b, "| `%s` | %s |\n", f.label(), strings.ReplaceAll(f.help, "|", `\|`))
	}
}
