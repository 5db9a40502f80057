package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// TestStdioServerAllowlistReachesOnlyAllowedHosts runs a real stdio server
// (the fault server's fetch tool) in bubblewrap under network allowlist:
// through its own egress proxy it reaches the allowed loopback fixture by
// name; the same fixture by IP literal, and the allowed name on another
// port, are refused; each decision reaches OnEgress with its host, port
// and rule. No traffic leaves the host: the fixtures listen on loopback.
func TestStdioServerAllowlistReachesOnlyAllowedHosts(t *testing.T) {
	t.Parallel()
	fixture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fixture") }))
	defer fixture.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "other") }))
	defer other.Close()
	port, otherPort := fixture.Listener.Addr().(*net.TCPAddr).Port, other.Listener.Addr().(*net.TCPAddr).Port
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rule := fmt.Sprintf("localhost:%d", port)
	srv := faultStdio(t, "web", "fetch")
	srv.Dir = t.TempDir()
	srv.Sandbox = Sandbox{Network: "allowlist", Allow: []string{rule}}
	var mu sync.Mutex
	var got []authority.EgressDecision
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), EgressForwarder: exe,
		OnEgress: func(server string, d authority.EgressDecision) error {
			if server != "web" {
				t.Errorf("decision for server %q, want web", server)
			}
			mu.Lock()
			got = append(got, d)
			mu.Unlock()
			return nil
		}})
	fetch := func(u string) string {
		res, err := c.CallTool(context.Background(), "mcp/web/fetch", mustJSON(map[string]string{"url": u}))
		if err != nil || len(res.Text) == 0 {
			t.Fatalf("fetch %s: %+v, %v", u, res, err)
		}
		return res.Text[0]
	}
	for _, tc := range []struct{ url, want string }{
		{fmt.Sprintf("http://localhost:%d/", port), "200 fixture"},
		{fmt.Sprintf("http://127.0.0.1:%d/", port), "403 egress: 127.0.0.1"},
		{fmt.Sprintf("http://localhost:%d/", otherPort), "403 egress: localhost"},
	} {
		if got := fetch(tc.url); !strings.HasPrefix(got, tc.want) {
			t.Errorf("fetch %s from inside the sandbox: %q, want %q", tc.url, got, tc.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	type key struct {
		host    string
		port    int
		allowed bool
		rule    string
	}
	var keys []key
	for _, d := range got {
		keys = append(keys, key{d.Host, d.Port, d.Allowed, d.Rule})
	}
	want := []key{{"localhost", port, true, rule}, {"127.0.0.1", port, false, ""}, {"localhost", otherPort, false, ""}}
	if !slices.Equal(keys, want) {
		t.Errorf("egress decisions %+v, want %+v", keys, want)
	}
}

// TestStdioServerAllowlistRecordsDecisionsInTheLedger: without OnEgress,
// each decision of a server's egress proxy is a decision record of
// capability "mcp/SERVER" carrying the host, port and rule.
func TestStdioServerAllowlistRecordsDecisionsInTheLedger(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := faultStdio(t, "web", "fetch")
	srv.Dir = t.TempDir()
	srv.Sandbox = Sandbox{Network: "allowlist", Allow: []string{"localhost:1"}}
	rec := &decisionRecorder{}
	c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), EgressForwarder: exe, Ledger: rec, AgentID: "a"})
	res, err := c.CallTool(context.Background(), "mcp/web/fetch", json.RawMessage(`{"url":"http://denied.invalid:8080/"}`))
	if err != nil || len(res.Text) == 0 || !strings.HasPrefix(res.Text[0], "403 ") {
		t.Fatalf("fetch: %+v, %v", res, err)
	}
	d, ok := rec.find("mcp/web")
	if !ok || d.Allowed || d.Layer != authority.LayerEgress || d.RuleID != authority.RuleEgressUnlisted ||
		d.Egress == nil || d.Egress.Host != "denied.invalid" || d.Egress.Port != 8080 {
		t.Errorf("ledger decision %+v (found %v), want the denial of denied.invalid:8080 with its egress", d, ok)
	}
}

// TestStdioServerAllowlistNeedsAForwarder: a server under network
// allowlist without Options.EgressForwarder fails to start, saying what
// to set.
func TestStdioServerAllowlistNeedsAForwarder(t *testing.T) {
	t.Parallel()
	srv := faultStdio(t, "web", "fetch")
	srv.Dir = t.TempDir()
	srv.Sandbox = Sandbox{Network: "allowlist", Allow: []string{"localhost:1"}}
	_, err := Open(context.Background(), Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeLauncher || !strings.Contains(err.Error(), "EgressForwarder") {
		t.Fatalf("got %v; want mcp_launcher naming EgressForwarder", err)
	}
}

// decisionRecorder is a ledger.Recorder that keeps its decisions.
type decisionRecorder struct {
	mu sync.Mutex
	ds map[string][]authority.Decision
}

func (r *decisionRecorder) RecordDecision(_ context.Context, _, capability string, d authority.Decision) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ds == nil {
		r.ds = map[string][]authority.Decision{}
	}
	r.ds[capability] = append(r.ds[capability], d)
	return nil
}

func (r *decisionRecorder) find(capability string) (authority.Decision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ds := r.ds[capability]
	if len(ds) == 0 {
		return authority.Decision{}, false
	}
	return ds[len(ds)-1], true
}
