package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/mcp"
)

// benchGet serves one request and fails on anything but 200.
func benchGet(b *testing.B, h http.Handler, path string) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
	if w.Code != http.StatusOK {
		b.Fatalf("GET %s answered %d: %s", path, w.Code, w.Body.String())
	}
}

// BenchmarkInspectorPages renders the Stacks, Tools and MCP pages over
// 20 HTTP MCP servers whose probe discovered 10 tools each: 200 tools
// and 20 servers, each a card. A deployment holds at most 16 servers, so
// they are two stacks of 10.
func BenchmarkInspectorPages(b *testing.B) {
	const stacksN, servers, tools = 2, 10, 10
	dir := b.TempDir()
	args := []string{"--bind", "workspace=" + dir}
	healths := map[string][]mcp.Health{}
	for st := range stacksN {
		var cfg strings.Builder
		cfg.WriteString("schema_version = 1\n[options.shell]\nenabled = false\n[[options.mcp.policies]]\n[options.mcp.policies.tools]\ndefault = \"allow\"\n")
		stack := fmt.Sprintf("wide-%d", st)
		for s := range servers {
			name := fmt.Sprintf("s%d%02d", st, s)
			fmt.Fprintf(&cfg, "[options.mcp.servers.%s]\ntransport = \"http\"\nurl = \"https://%s.example.test/mcp\"\n", name, name)
			h := mcp.Health{Server: name, Transport: mcp.HTTP, State: mcp.Ready, Version: mcp.SupportedVersions()[0], CheckedAt: time.Unix(0, 0)}
			for i := range tools {
				id := authority.MCPTool(name, fmt.Sprintf("tool%02d", i))
				h.Tools = append(h.Tools, mcp.ToolStatus{Name: fmt.Sprintf("tool%02d", i), ID: id, Alias: mcp.Alias(id), Admitted: true, Digest: "sha256:" + strings.Repeat("0", 64)})
			}
			healths[stack] = append(healths[stack], h)
		}
		path := filepath.Join(dir, stack+".toml")
		if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	p, err := parseArgs(args, "inspect")
	if err != nil {
		b.Fatal(err)
	}
	stacks, err := loadStacks(context.Background(), p, inspectHost(""))
	if err != nil {
		b.Fatal(err)
	}
	total := 0
	for _, s := range stacks {
		s.opts.Health = healths[s.Name]
		if s.Graph, err = s.d.Graph(context.Background(), s.opts); err != nil {
			b.Fatal(err)
		}
		total += len(s.Kind(graph.KindMCPTool))
	}
	if total != stacksN*servers*tools {
		b.Fatalf("the graphs hold %d MCP tools, want %d", total, stacksN*servers*tools)
	}
	in, err := newInspector(stacks, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	for _, page := range []string{"/stacks", "/tools", "/mcp"} {
		b.Run(strings.TrimPrefix(page, "/"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchGet(b, in, page)
			}
		})
	}
}

// BenchmarkInspectorTasksPage renders a page of the Tasks page, and one
// task's page, over a bbolt ledger of 10,000 tasks opened read-only: the
// page reads its 25 task IDs from the store's index, never the whole
// store.
func BenchmarkInspectorTasksPage(b *testing.B) {
	const tasks, batch = 10000, 1000
	path := filepath.Join(b.TempDir(), "ledger.db")
	w, err := ledger.OpenBolt(path, ledger.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0).UTC()
	for start := 0; start < tasks; start += batch {
		var recs []ledger.Record
		for i := start; i < start+batch; i++ {
			id := fmt.Sprintf("task-%05d", i)
			recs = append(recs,
				ledger.Record{TaskID: id, N: 1, Kind: ledger.RecordTask, Time: at, Task: &ledger.TaskRecord{TaskID: id, RootAgentID: "root"}},
				ledger.Record{TaskID: id, N: 2, Kind: ledger.RecordAgent, Time: at, Agent: &ledger.AgentRecord{AgentID: "root", Kind: "root"}},
				ledger.Record{TaskID: id, N: 3, Kind: ledger.RecordFinish, Time: at, Finish: &ledger.FinishRecord{AgentID: "root", Outcome: ledger.Outcome{Status: outcome.Completed}}})
		}
		if err := w.Append(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	store, err := ledger.OpenBolt(path, ledger.BoltOptions{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	c := readinessCases(&testing.T{})[0]
	p, err := parseArgs(c.args, "inspect")
	if err != nil {
		b.Fatal(err)
	}
	stacks, err := loadStacks(context.Background(), p, inspectHost(c.bubblewrap))
	if err != nil {
		b.Fatal(err)
	}
	in, err := newInspector(stacks, store, false)
	if err != nil {
		b.Fatal(err)
	}
	for _, page := range []string{"/tasks?after=task-05000", "/task?id=task-05000"} {
		b.Run(strings.SplitN(strings.TrimPrefix(page, "/"), "?", 2)[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchGet(b, in, page)
			}
		})
	}
}
