package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestRunUnderAllowlistReachesTheAllowedNameOnly runs `pablo run` with
// shell.run under network allowlist, the CLI's own test binary as the
// forwarder: curl reaches the allowed loopback fixture by name through
// the proxy and the call completes; the same server by IP literal is
// refused and the call fails.
func TestRunUnderAllowlistReachesTheAllowedNameOnly(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs /usr/bin/curl")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fixture-body") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("schema_version = 1\n[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"allowlist\"\nallow = [\"localhost:%d\"]\n", port)), 0o600)
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(fmt.Sprintf(`{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"curl -fsS http://localhost:%d/","cwd":"."}},{"id":"c2","name":"shell_run","arguments":{"command":"curl -fsS http://127.0.0.1:%[1]d/","cwd":"."}}]},{"text":["done"]}]}`, port)), 0o600)
	store := filepath.Join(dir, "ledger.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir, forwarder: exe}
	if code := run(context.Background(), []string{"run", "go", "--json", "--script", script, "--store", store, "--config", cfg, "--bind", "workspace=" + ws}, h); code != 0 {
		t.Fatalf("run: exit %d %s %s", code, out.String(), errb.String())
	}
	_, rec, _ := cli(t, "ledger", "recover", "--store", store, "--json")
	var rep struct {
		Tasks []struct {
			Completed []recordedCall `json:"completed"`
		} `json:"tasks"`
	}
	if json.Unmarshal([]byte(rec), &rep) != nil || len(rep.Tasks) != 1 {
		t.Fatalf("recover: %s", rec)
	}
	status := map[string]string{}
	for _, c := range rep.Tasks[0].Completed {
		status[c.CallID] = c.Status
	}
	// curl -f exits 22 on the proxy's 403: a recoverable error.
	if status["call_1_1"] != "completed" || status["call_1_2"] != "recoverable_error" {
		t.Fatalf("calls %v, want the allowed name completed and the IP literal refused", status)
	}
}
