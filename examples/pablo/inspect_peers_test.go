package main

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileCardServer serves, at /card, an admissible Agent Card whose
// name, version and skill IDs hold the XSS corpus, within the card's
// bounds. Its RPC endpoint fails the test: a probe sends nothing there.
func hostileCardServer(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/card", func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(map[string]any{
			"name": xssPayloads[0] + xssPayloads[1], "version": xssPayloads[4], "description": strings.Join(xssPayloads, " "),
			"supportedInterfaces": []any{map[string]any{"url": srv.URL + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
			"capabilities":        map[string]any{"streaming": true},
			"defaultInputModes":   []any{"text/plain"}, "defaultOutputModes": []any{"application/json"},
			"skills": []any{
				map[string]any{"id": xssPayloads[2], "name": xssPayloads[0], "description": xssPayloads[1], "tags": []any{}},
				map[string]any{"id": xssPayloads[3], "name": "n", "description": "d", "tags": []any{}},
			},
		})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) { t.Error("a probe reached the RPC endpoint") })
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestInspectorEscapesHostileServersAndCards probes a stack whose MCP
// server (the repository's fixture server) describes its tool with the
// XSS corpus and whose A2A remote's Agent Card carries it in its name,
// version and skill IDs. The MCP page then shows the description and
// the card's fields, as text: no payload appears raw, nothing on the
// page would run, and, where Chromium is installed, nothing runs in it.
func TestInspectorEscapesHostileServersAndCards(t *testing.T) {
	dir := t.TempDir()
	fault := builtFault(t, dir)
	cards := hostileCardServer(t)
	desc, _ := json.Marshal(strings.Join(xssPayloads, " "))
	cfg := filepath.Join(dir, "hostile.toml")
	if err := os.WriteFile(cfg, []byte(`schema_version = 1
[options.shell]
enabled = false
[options.mcp.servers.records]
transport = "stdio"
command = "`+fault+`"
args = ["-mode", "ok", "-desc", `+string(desc)+`]
[[options.mcp.policies]]
[options.mcp.policies.tools]
default = "allow"
[options.a2a.remotes.reviewer]
card_url = "`+cards.URL+`/card"
endpoint = "`+cards.URL+`/rpc"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	in, srv := probedInspector(t, []string{"--config", cfg, "--bind", "workspace=" + dir, "--loopback-http"})
	if code := postProbe(t, srv, in.token, "hostile"); code != http.StatusSeeOther {
		t.Fatalf("the probe answered %d, want 303", code)
	}
	_, page := get(t, srv, "/mcp")
	for _, want := range []string{`data-tool="mcp/records/echo"`, `data-remote="reviewer"`, "pablo-xss-1", "pablo-xss-3", "pablo-xss-4", "pablo-xss-5"} {
		if !strings.Contains(page, want) {
			t.Errorf("the probed MCP page lacks %q: the description or the card is not shown:\n%s", want, page)
		}
	}
	for what, text := range map[string]string{"echo's description": strings.Join(xssPayloads, " "), "the card's name": xssPayloads[0] + xssPayloads[1], "the card's version": xssPayloads[4], "a card skill ID": xssPayloads[3]} {
		if !strings.Contains(page, html.EscapeString(text)) {
			t.Errorf("the probed MCP page does not show %s, escaped", what)
		}
	}
	for _, p := range xssPayloads {
		if strings.Contains(page, p) {
			t.Errorf("the MCP page shows %q raw", p)
		}
	}
	assertInert(t, "/mcp", page)
	if chromiumPath() != "" {
		newChromium(t).open(srv.URL+"/mcp", "")
	} else {
		t.Log("no chromium on PATH: the page was checked parsed, not run")
	}
}

// probedInspector serves args as `pablo inspect` does, with a probe
// token.
func probedInspector(t *testing.T, args []string) (*inspector, *httptest.Server) {
	t.Helper()
	p, err := parseArgs(args, "inspect")
	if err != nil {
		t.Fatal(err)
	}
	h := inspectHost("")
	stacks, err := loadStacks(t.Context(), p, h)
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInspector(stacks, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	in.token, in.host = newProbeToken(), h
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	return in, srv
}

// postProbe presses the Probe button of stack, as the MCP page's form
// does, and returns the status.
func postProbe(t *testing.T, srv *httptest.Server, token, stack string) int {
	t.Helper()
	client := *srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/probe", strings.NewReader(url.Values{"token": {token}, "stack": {stack}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
