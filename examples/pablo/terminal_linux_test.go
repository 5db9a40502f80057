package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/pabloagent/pablo/termtext"
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

// TestEveryCommandShowsATerminalRecordedTextEscapedAndAPipeItExactly: what
// a ledger record (a model's tool name), an MCP server (a tool name) or a
// Skill file (a description) holds, an OSC 52 clipboard write, a clear
// screen, a C1 CSI, bidi overrides and isolates, reaches a terminal from
// `ledger show`, `ledger recover`, `mcp probe` and `skills list|show`
// escaped: the terminal shows exactly the pipe's bytes escaped, no
// control rune at all; with --json, JSON string escapes, so the document
// read off the terminal holds the same values. Through a pipe the bytes
// are exactly the record's. An error on stderr is escaped the same way.
func TestEveryCommandShowsATerminalRecordedTextEscapedAndAPipeItExactly(t *testing.T) {
	const hostile = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\u009b31m\u202eevil\u202c\u2066"
	dir := t.TempDir()
	bin, fault := buildPablo(t, dir), builtFault(t, dir)
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.MkdirAll(filepath.Join(dir, "skills", "peek"), 0o700)
	// Skills refuse C0 and C1 controls in a description; format runes
	// pass, as a Skill file writes them.
	bidi := "Peeks \u202eevil\u202c \u2066iso\u2069 \u200bhidden"
	os.WriteFile(filepath.Join(dir, "skills", "peek", "SKILL.md"), []byte("---\nname: peek\ndescription: \""+bidi+"\"\n---\nBody.\n"), 0o600)
	// The model calls a tool whose name holds them: the ledger records it
	// as the model wrote it.
	sb, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"text": []string{"look " + hostile}, "tool_calls": []any{map[string]any{"id": "c1", "name": "fs.read" + hostile, "arguments": map[string]string{"path": "n" + hostile}}}},
	}})
	sb = bytes.ReplaceAll(sb, []byte(`\u009b`), []byte("\u009b"))
	os.WriteFile(filepath.Join(dir, "s.json"), sb, 0o600)
	base := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.shell]\nenabled = false\n"
	runCfg, cfg := filepath.Join(dir, "run.toml"), filepath.Join(dir, "d.toml")
	os.WriteFile(runCfg, []byte(base), 0o600)
	os.WriteFile(cfg, []byte(base+
		"[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \".\" }\n"+
		"[options.mcp.servers.evil]\ntransport = \"stdio\"\ncommand = \""+fault+"\"\nargs = [\"-mode\", \"hostile\"]\n"), 0o600)
	deployment := []string{"--config", cfg, "--bind", "workspace=" + ws, "--bind", "skills=" + filepath.Join(dir, "skills")}
	store := filepath.Join(dir, "ledger.db")
	pipe := func(t *testing.T, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var out, errs bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errs.String()
	}
	if code, _, errs := pipe(t, "run", "read it", "--store", store, "--config", runCfg, "--bind", "workspace="+ws); code != 1 {
		t.Fatalf("the scripted run: exit %d: %s", code, errs)
	}
	_, report, _ := pipe(t, "ledger", "show", "--store", store, "--json")
	var r struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
	}
	if json.Unmarshal([]byte(report), &r) != nil || len(r.Tasks) != 1 {
		t.Fatalf("the ledger holds no one task: %q", report)
	}
	task := r.Tasks[0].TaskID

	for _, c := range []struct {
		name string
		args []string
		raw  string // what the pipe carries byte for byte
		json bool
	}{
		{"LedgerShow", []string{"ledger", "show", task, "--store", store}, "fs.read" + hostile, false},
		{"LedgerShowJSON", []string{"ledger", "show", task, "--store", store, "--json"}, `"name":"fs.read\u001b]52;c;cHduZWQ=\u0007\u001b[2J` + "\u009b31m\u202eevil\u202c\u2066", true},
		{"LedgerRecover", []string{"ledger", "recover", task, "--store", store}, "fs.read" + hostile, false},
		{"MCPProbe", append([]string{"mcp", "probe"}, deployment...), "peek" + hostile, false},
		{"MCPProbeJSON", append([]string{"mcp", "probe", "--json"}, deployment...), "\u009b31m\u202eevil\u202c\u2066", true},
		{"SkillsShow", append([]string{"skills", "show", "team/peek"}, deployment...), bidi, false},
		{"SkillsList", append([]string{"skills", "list"}, deployment...), bidi, false},
		{"SkillsShowJSON", append([]string{"skills", "show", "team/peek", "--json"}, deployment...), bidi, true},
		{"AnErrorOnStderr", append([]string{"skills", "show", "team/peek" + hostile}, deployment...), "team/peek" + hostile, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := pipe(t, c.args...)
			piped := stdout + stderr
			if !strings.Contains(piped, c.raw) {
				t.Fatalf("the pipe does not carry %q exactly:\n%q", c.raw, piped)
			}
			term, controller := openPTY(t)
			var shown bytes.Buffer
			read := make(chan struct{})
			go func() {
				defer close(read)
				io.Copy(&shown, controller)
			}()
			cmd := exec.Command(bin, c.args...)
			cmd.Stdout, cmd.Stderr = term, term
			err := cmd.Run()
			term.Close()
			<-read
			if got := cmd.ProcessState.ExitCode(); got != code {
				t.Fatalf("exit %d on the terminal, %d into a pipe (%v)", got, code, err)
			}
			out := strings.ReplaceAll(shown.String(), "\r\n", "\n")
			for _, r := range out {
				if r != '\n' && r != '\t' && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
					t.Fatalf("the terminal got %U raw:\n%q", r, out)
				}
			}
			if !c.json {
				// stdout then stderr: a command writes one of them here.
				if stdout != "" && stderr != "" {
					t.Fatalf("both streams written: %q %q", stdout, stderr)
				}
				if want := string(termtext.AppendPrintable(nil, piped, true)); out != want {
					t.Errorf("the terminal shows\n %q\nwant the pipe's bytes escaped\n %q", out, want)
				}
				return
			}
			var onTerm, onPipe any
			if err := json.Unmarshal([]byte(out), &onTerm); err != nil {
				t.Fatalf("the terminal's JSON: %v\n%q", err, out)
			}
			json.Unmarshal([]byte(stdout), &onPipe)
			// A probe's time is its own.
			if !reflect.DeepEqual(withoutKey(onTerm, "checked_at"), withoutKey(onPipe, "checked_at")) {
				t.Errorf("the terminal's JSON\n %v\nholds other values than the pipe's\n %v", onTerm, onPipe)
			}
		})
	}
}

// withoutKey is a decoded JSON value without the members named key.
func withoutKey(v any, key string) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k != key {
				out[k] = withoutKey(e, key)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutKey(e, key)
		}
		return out
	}
	return v
}
