package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// a2aCardServer serves an admissible Agent Card at /card (endpoint
// /rpc) and one naming another endpoint at /card-elsewhere. Its RPC
// endpoint fails the test: a probe sends nothing there.
func a2aCardServer(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	card := func(endpoint string) []byte {
		b, _ := json.Marshal(map[string]any{
			"name": "reviewer", "version": "1", "description": "d",
			"supportedInterfaces": []any{map[string]any{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
			"capabilities":        map[string]any{"streaming": true},
			"defaultInputModes":   []any{"text/plain"}, "defaultOutputModes": []any{"application/json"},
			"skills": []any{map[string]any{"id": "review", "name": "Review", "description": "d", "tags": []any{}}},
		})
		return b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/card", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("the card GET carried a credential")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(card(srv.URL + "/rpc"))
	})
	mux.HandleFunc("/card-elsewhere", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(card(srv.URL + "/other-rpc"))
	})
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) { t.Error("a probe reached the RPC endpoint") })
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func a2aRemoteTOML(base, cardPath string) string { return a2aRemotesTOML(base, cardPath, true) }

// a2aRemotesTOML configures the remote "plain" and, with bearer, the
// remote "reviewer" whose bearer scheme the test cards do not declare.
func a2aRemotesTOML(base, cardPath string, bearer bool) string {
	if !bearer {
		return fmt.Sprintf("schema_version = 1\n[options.a2a.remotes.plain]\ncard_url = %q\nendpoint = %q\n", base+cardPath, base+"/rpc")
	}
	return fmt.Sprintf("schema_version = 1\n[credentials.reviewer]\nconsumer = \"a2a.bearer\"\nsources = [{ kind = \"environment\", name = \"REVIEWER_TOKEN\" }]\n"+
		"[options.a2a.remotes.reviewer]\ncard_url = %q\nendpoint = %q\nbearer = { scheme = \"bearer\", credential = \"reviewer\" }\n"+
		"[options.a2a.remotes.plain]\ncard_url = %q\nendpoint = %q\n", base+cardPath, base+"/rpc", base+cardPath, base+"/rpc")
}

// TestA2AProbe prints, per remote, whether its card is admitted and
// exactly why not, without resolving the bearer or calling the endpoint.
func TestA2AProbe(t *testing.T) {
	t.Parallel()
	srv := a2aCardServer(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "a2a.toml")
	os.WriteFile(cfg, []byte(a2aRemoteTOML(srv.URL, "/card")), 0o600)
	// The reviewer's card declares no bearer scheme: refused (security);
	// the plain remote is admitted.
	code, out, _ := cli(t, "a2a", "probe", "--loopback-http", "--config", cfg, "--bind", "workspace="+dir)
	if code != 6 || !strings.Contains(out, "plain: admitted") || !strings.Contains(out, "/rpc (A2A 1.0)") || !strings.Contains(out, "reviewer: refused (security)") || !strings.Contains(out, "skill: \"review\"") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	os.WriteFile(cfg, []byte(a2aRemoteTOML(srv.URL, "/card-elsewhere")), 0o600)
	code, out, _ = cli(t, "a2a", "probe", "--json", "--loopback-http", "--config", cfg, "--bind", "workspace="+dir)
	var doc struct {
		Remotes []struct {
			Remote, Reason string
			Admitted       bool
		}
	}
	if code != 6 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Remotes) != 2 || doc.Remotes[0].Reason != "endpoint_mismatch" || doc.Remotes[0].Admitted {
		t.Fatalf("exit %d: %s", code, out)
	}
	// Plain http without the loopback allowance never loads.
	if code, _, _ := cli(t, "a2a", "probe", "--config", cfg, "--bind", "workspace="+dir); code != 2 {
		t.Fatalf("exit %d without --loopback-http", code)
	}
}
