package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmePresetCommandsRunAsShown: every `pablo` command line of the
// README that names the shipped presets runs, from a directory holding a
// copy of presets/, the README's example deployment file and a work
// directory, as the README says: a command shown with its output ("$ pablo
// …" followed by lines) prints that output first, and one shown alone exits
// 0. So the README's way of importing a preset is one that loads.
func TestReadmePresetCommandsRunAsShown(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "presets"), os.DirFS(shipped)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, block := range fencedBlocks(readme, "toml") {
		first, _, _ := strings.Cut(block, "\n")
		name, ok := strings.CutPrefix(first, "# ")
		if !ok || !strings.HasSuffix(name, ".toml") || filepath.IsAbs(name) || strings.Contains(name, "..") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmds := presetCommands(readme)
	if len(cmds) < 3 {
		t.Fatalf("the README shows %d commands on the shipped presets, want the policy check, the preset's validate and the importing deployment's validate", len(cmds))
	}
	for _, c := range cmds {
		if strings.ContainsAny(c.line, `"'`) {
			t.Fatalf("%q: quoted arguments; split them here before adding such a command", c.line)
		}
		args := strings.Fields(c.line)[1:]
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir})
		switch {
		case c.shown == "" && code != 0:
			t.Errorf("%s: exit %d\n%s%s", c.line, code, out.String(), errb.String())
		case c.shown != "" && !strings.HasPrefix(out.String(), c.shown):
			t.Errorf("%s: the README shows\n%s\nthe CLI printed (exit %d)\n%s%s", c.line, c.shown, code, out.String(), errb.String())
		}
	}
}

// readmeCommand is one command line of the README and the output it shows
// under it, if any.
type readmeCommand struct {
	line, shown string
}

// presetCommands returns the README's indented `pablo` command lines that
// name the shipped presets, continuation lines joined.
func presetCommands(readme string) []readmeCommand {
	var out []readmeCommand
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		prompt := strings.HasPrefix(l, "    $ pablo ")
		if !prompt && !strings.HasPrefix(l, "    pablo ") {
			continue
		}
		cmd := strings.TrimPrefix(strings.TrimSpace(l), "$ ")
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
		}
		var shown strings.Builder
		for prompt && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") {
			i++
			shown.WriteString(strings.TrimPrefix(lines[i], "    ") + "\n")
		}
		if strings.Contains(cmd, "preset=presets") {
			out = append(out, readmeCommand{line: cmd, shown: shown.String()})
		}
	}
	return out
}

// fencedBlocks returns the text of each ```lang block of md.
func fencedBlocks(md, lang string) []string {
	var out []string
	open := "```" + lang + "\n"
	for {
		start := strings.Index(md, open)
		if start < 0 {
			return out
		}
		md = md[start+len(open):]
		end := strings.Index(md, "```")
		if end < 0 {
			return out
		}
		out = append(out, md[:end])
		md = md[end+3:]
	}
}
