package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// TestModelTextReachesATerminalEscapedAndAPipeExactly: the real `pablo run`
// binary, its stdout and stderr a pseudo-terminal, prints a scripted
// model's text holding an OSC 52 clipboard write, a clear screen, a C1 CSI
// and bidi controls, each split across stream deltas, and a tool status
// line whose arguments hold a C1 CSI and a bidi override: the terminal
// shows every one escaped and gets no control byte but pablo's own
// status-line reset. The same run into pipes writes the model's text
// exactly as the model wrote it, and the status line as it is.
func TestModelTextReachesATerminalEscapedAndAPipeExactly(t *testing.T) {
	first := []string{"Look: \x1b]52;c;", "cHduZWQ=\x07 then \x1b[", "2J clear, \u009b31mred, \u202eevil\u202c", " and \u200bhidden"}
	second := []string{"second \u009b", "2J \u2066iso\u2069 \x1b", "[0m tab\tend"}
	// The arguments hold the raw runes, not JSON escapes: what a model's
	// provider sends.
	path := "note\u009b\u202e.txt"
	script := map[string]any{"turns": []any{
		map[string]any{"text": first, "tool_calls": []any{map[string]any{"id": "c1", "name": "fs_read", "arguments": json.RawMessage(`{"path":"` + path + `"}`)}}},
		map[string]any{"text": second},
	}}
	sb, _ := json.Marshal(script)
	sb = bytes.ReplaceAll(sb, []byte(`\u009b`), []byte("\u009b")) // json.Marshal escaped nothing else of it
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, path), []byte("a note\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s.json"), sb, 0o600)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.shell]\nenabled = false\n"), 0o600)
	bin := buildPablo(t, dir)
	args := []string{"run", "read the note", "--config", cfg, "--bind", "workspace=" + ws}
	text := strings.Join(first, "") + "\n" + strings.Join(second, "") + "\n"

	t.Run("Terminal", func(t *testing.T) {
		term, controller := openPTY(t)
		var shown bytes.Buffer
		read := make(chan struct{})
		go func() {
			defer close(read)
			io.Copy(&shown, controller) // until the terminal's last opener closes it
		}()
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = term, term
		err := cmd.Run()
		term.Close()
		<-read
		out := shown.String()
		if err != nil {
			t.Fatalf("%v:\n%q", err, out)
		}
		// What is left once pablo's own status-line reset and the
		// terminal's newline translation are taken out.
		rest := strings.ReplaceAll(strings.ReplaceAll(out, "\r\x1b[2K", ""), "\r\n", "\n")
		// Each line of text is shown whole: nothing between its deltas
		// cleared it.
		for _, w := range []string{`Look: \u001b]52;c;cHduZWQ=\u0007 then \u001b[2J clear, \u009b31mred, \u202eevil\u202c and \u200bhidden` + "\r\n",
			`second \u009b2J \u2066iso\u2069 \u001b[0m tab` + "\tend\r\n"} {
			if !strings.Contains(out, w) {
				t.Errorf("the terminal does not show %q:\n%q", w, out)
			}
		}
		if w := `→ fs.read {"path":"note\u009b\u202e.txt"}`; !strings.Contains(rest, w) {
			t.Errorf("the terminal does not show the status line %q:\n%q", w, out)
		}
		// It holds no control.
		for _, r := range rest {
			if r != '\n' && r != '\t' && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
				t.Fatalf("the terminal got %U raw:\n%q", r, out)
			}
		}
	})

	t.Run("Pipe", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		if stdout.String() != text {
			t.Errorf("stdout\n %q\nwant the model's text as it wrote it\n %q", stdout.String(), text)
		}
		if !strings.Contains(stderr.String(), `→ fs.read {"path":"`+path+`"}`) {
			t.Errorf("the status line is not as the model wrote it:\n%q", stderr.String())
		}
	})
}
