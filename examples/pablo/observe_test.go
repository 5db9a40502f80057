package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scripted writes a scripted deployment with extra TOML appended.
func scripted(t *testing.T, extra string) (cfg, ws, dir string) {
	t.Helper()
	dir = t.TempDir()
	ws = filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("INV-1042 paid\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["Reading."],"tool_calls":[{"name":"fs_read","arguments":{"path":"evidence.md"}}]},{"text":["Paid on time."]}]}`), 0o600)
	cfg = filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.shell]\nenabled = false\n"+extra), 0o600)
	return cfg, ws, dir
}

func TestRunTraceFlagWritesANewPrivateFile(t *testing.T) {
	t.Parallel()
	cfg, ws, dir := scripted(t, "")
	path := filepath.Join(dir, "run.jsonl")
	code, out, errs := runWithEnv(t, nil, "run", "What was paid?", "--config", cfg, "--bind", "workspace="+ws, "--trace", path)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 || !strings.Contains(string(raw), `"type":"run.finished"`) || strings.Contains(string(raw), "INV-1042") || strings.Contains(string(raw), "What was paid") {
		t.Fatalf("mode %v trace %s", st.Mode(), raw)
	}
	// The same path again: a trace is always a new file.
	code, out, _ = runWithEnv(t, nil, "run", "What was paid?", "--json", "--config", cfg, "--bind", "workspace="+ws, "--trace", path)
	if code != 2 || !strings.Contains(out, `"code":"trace_setup_failed"`) {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestRunCapturesContentIntoTheDeploymentTrace(t *testing.T) {
	t.Parallel()
	cfg, ws, dir := scripted(t, "[options.trace]\npath = { base = \"binding\", name = \"traces\", path = \"{session_id}.jsonl\" }\n")
	traces := filepath.Join(dir, "traces")
	os.Mkdir(traces, 0o700)
	code, out, errs := runWithEnv(t, nil, "run", "What was paid?", "--config", cfg, "--bind", "workspace="+ws, "--bind", "traces="+traces, "--capture-content")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	files, _ := os.ReadDir(traces)
	if len(files) != 1 {
		t.Fatalf("%d trace files", len(files))
	}
	raw, _ := os.ReadFile(filepath.Join(traces, files[0].Name()))
	if !strings.Contains(string(raw), "INV-1042") || !strings.Contains(string(raw), "Paid on time.") || strings.Contains(string(raw), "What was paid") {
		t.Fatalf("trace %s", raw)
	}
}

func TestRunTraceTemplateIsForSessions(t *testing.T) {
	t.Parallel()
	cfg, ws, dir := scripted(t, "")
	code, _, errs := runWithEnv(t, nil, "run", "x", "--config", cfg, "--bind", "workspace="+ws, "--trace", filepath.Join(dir, "{session_id}.jsonl"))
	if code != 2 || !strings.Contains(errs, "ACP sessions") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
