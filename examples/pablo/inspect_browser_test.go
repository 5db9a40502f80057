package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// hrefs are the link targets of a DOM whose path starts with prefix.
func hrefs(t *testing.T, dom, prefix string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "a" {
			if h, ok := attr(n, "href"); ok && strings.HasPrefix(h, prefix) {
				out = append(out, h)
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return out
}

// TestInspectorPagesInABrowser drives the inspector in headless
// Chromium as an operator would, clicking its links: the Stacks page of
// the locked production preset (its cards, as the browser built them,
// say what the stack's graph says), a why link on a card, each page of
// the navigation, a task on the Tasks page; then the Stacks page of
// every readiness golden's deployment. Nothing on any page runs a
// script, and each page's screenshot is saved as a test artifact
// (go test -artifacts keeps them). It skips only where no chromium is
// installed.
func TestInspectorPagesInABrowser(t *testing.T) {
	c := newChromium(t)

	// The production preset with a ledger of one scripted task.
	tmp := t.TempDir()
	store := filepath.Join(tmp, "ledger.db")
	script := filepath.Join(tmp, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":["reading"],"tool_calls":[{"name":"fs_read","arguments":{"path":"evidence.md"}}]},{"text":["done"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	demo := []string{"--config", "demo/deployment.toml", "--bind", "workspace=demo/work", "--bind", "skills=demo/skills"}
	if rc := run(context.Background(), append([]string{"run", "read the evidence", "--script", script, "--store", store}, demo...), inspectHost("")); rc != 0 {
		t.Fatalf("the scripted run exited %d", rc)
	}
	p, err := parseArgs(append(screenshotArgs(tmp), "--store", store), "inspect")
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := loadStacks(context.Background(), p, inspectHost(""))
	if err != nil {
		t.Fatal(err)
	}
	s, err := openStore(context.Background(), inspectHost(""), nil, store, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := newInspector(stacks, s, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptestServer(t, in)

	dom := c.open(srv+"/", "production-stacks")
	if !strings.Contains(dom, `data-launch="preview"`) {
		t.Error("the browser's Stacks page has no launch preview")
	}
	assertCardsMatch(t, "the browser's Stacks page", cardsOf(t, dom), stacks[0].Graph.Nodes)
	why := hrefs(t, dom, "/why?")
	if len(why) == 0 {
		t.Fatal("the browser's Stacks page links to no why page")
	}
	// The first card's why link, clicked.
	wdom := c.click(`article.card a[href^="/why?"]`, `[data-admitted]`, "production-why")
	if loc := c.location(); loc != srv+why[0] && loc != srv+strings.ReplaceAll(why[0], "&amp;", "&") {
		t.Errorf("the why link %s led to %s", why[0], loc)
	}
	if !strings.Contains(wdom, `class="chain"`) {
		t.Error("the why page the Stacks page links to shows no chain")
	}
	for _, step := range []struct{ link, want, shot string }{
		{`nav a[href="/tools"]`, `[data-list="production.read_only shell/commands"]`, "production-tools"},
		{`nav a[href="/mcp"]`, `[data-node="mcp:evidence"]`, "production-mcp"},
		{`nav a[href="/skills"]`, `[data-skill="preset/evidence"]`, "production-skills"},
		{`nav a[href="/tasks"]`, `[data-task]`, "production-tasks"},
	} {
		c.click(step.link, step.want, step.shot)
	}
	if tasks := hrefs(t, c.settled("/tasks", ""), "/task?"); len(tasks) != 1 {
		t.Fatalf("the browser's Tasks page links to %q", tasks)
	}
	tdom := c.click(`[data-task] a[href^="/task?"]`, `p.outcome`, "production-task")
	if acc := c.text(`[data-accounting]`); !strings.Contains(acc, "model calls 2 · tool calls 1") {
		t.Errorf("the task page the Tasks page links to says %q of its accounting", acc)
	}
	if !strings.Contains(tdom, "fs_read") && !strings.Contains(tdom, "fs.read") {
		t.Error("the task page the Tasks page links to shows no call")
	}

	// Every readiness state, as the browser shows each golden's stack.
	for _, rc := range readinessCases(t) {
		p, err := parseArgs(rc.args, "inspect")
		if err != nil {
			t.Fatal(err)
		}
		stacks, err := loadStacks(context.Background(), p, inspectHost(rc.bubblewrap))
		if err != nil {
			continue // the CLI refuses this deployment too (TestInspectorCardsSayWhatGraphAndWhySay)
		}
		in, err := newInspector(stacks, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		dom := c.open(httptestServer(t, in)+"/", rc.name)
		assertCardsMatch(t, "the browser's Stacks page of "+rc.name, cardsOf(t, dom), stacks[0].Graph.Nodes)
	}
}

// TestInspectorProbeAndXSSInABrowser serves, in headless Chromium, a
// stack whose every source of text is hostile: a Skill whose description
// and instructions hold the XSS corpus, the repository's fixture MCP
// server describing its tool with it, an A2A remote whose Agent Card
// carries it, and a ledger whose task output and tool result hold it.
// The browser presses the MCP page's Probe button (the form's POST, its
// token, the redirect back), and the page then shows the server's
// health, its tool with the hostile description and the card, as text;
// the Stacks page shows the probed graph. Every page, the why pages a
// payload names and the task page are then loaded with the pages'
// content security policy bypassed, so the escaping alone is tried:
// nothing runs, and the hostile text is there to read.
func TestInspectorProbeAndXSSInABrowser(t *testing.T) {
	c := newChromium(t)
	dir := t.TempDir()
	fault := builtFault(t, dir)
	cards := hostileCardServer(t)
	desc, _ := json.Marshal(strings.Join(xssPayloads, " "))
	skill := filepath.Join(dir, "skills", "hostile", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(skill), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, []byte("---\nname: hostile\ndescription: '"+strings.ReplaceAll(xssPayloads[0]+" "+xssPayloads[1]+" "+xssPayloads[3], "'", "''")+"'\n---\n"+strings.Join(xssPayloads, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hostile.toml")
	if err := os.WriteFile(cfg, []byte(`schema_version = 1
[options.shell]
enabled = false
[options.skills.roots]
team = { base = "binding", name = "skills", path = "." }
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

	// A ledger of a task whose tool result and output are hostile.
	text, _ := json.Marshal(strings.Join(xssPayloads, " "))
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":["reading"],"tool_calls":[{"name":"fs_read","arguments":{"path":"evidence.md"}}]},{"text":[`+string(text)+`]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "evidence.md"), []byte(strings.Join(xssPayloads, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "ledger.db")
	if rc := run(context.Background(), []string{"run", "hostile", "--script", script, "--store", store, "--config", "demo/deployment.toml", "--bind", "workspace=" + work, "--bind", "skills=demo/skills"}, inspectHost("")); rc != 0 {
		t.Fatalf("the scripted run exited %d", rc)
	}

	p, err := parseArgs([]string{"--config", cfg, "--bind", "workspace=" + dir, "--bind", "skills=" + filepath.Join(dir, "skills"), "--loopback-http"}, "inspect")
	if err != nil {
		t.Fatal(err)
	}
	h := inspectHost("")
	stacks, err := loadStacks(context.Background(), p, h)
	if err != nil {
		t.Fatal(err)
	}
	ledgerStore, err := openStore(context.Background(), h, nil, store, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ledgerStore.Close()
	in, err := newInspector(stacks, ledgerStore, false)
	if err != nil {
		t.Fatal(err)
	}
	in.token, in.host = newProbeToken(), h
	srv := httptestServer(t, in)

	// The Probe button, pressed.
	before := c.open(srv+"/mcp", "hostile-mcp-unprobed")
	if strings.Contains(before, "data-server=") || !strings.Contains(before, `data-state="unknown"`) && !strings.Contains(before, "probed false") {
		t.Errorf("the MCP page shows a probe before the button was pressed")
	}
	c.click(`#stack-hostile form[action="/probe"] button`, `tr[data-server="records"]`, "hostile-mcp-probed")
	if loc := c.location(); loc != srv+"/mcp#stack-hostile" {
		t.Errorf("the probe led to %s, want the stack's section of the MCP page", loc)
	}
	in.mu.RLock()
	health := stacks[0].MCPHealth()
	in.mu.RUnlock()
	if len(health) != 1 {
		t.Fatalf("the probe recorded the health of %d servers, want the one", len(health))
	}
	if row := c.text(`tr[data-server="records"]`); !strings.Contains(row, "stdio") || !strings.Contains(row, string(health[0].State)) || health[0].State == mcp.Unknown {
		t.Errorf("the probed server's row says %q, want its transport and the probe's health %s", row, health[0].State)
	}
	if got := c.text(`tr[data-tool="mcp/records/echo"] td.description`); got != strings.Join(xssPayloads, " ") {
		t.Errorf("the browser shows echo's description as %q, want the server's text as written", got)
	}
	if got := c.text(`tr[data-remote="reviewer"] td.card-name`); got != xssPayloads[0]+xssPayloads[1] {
		t.Errorf("the browser shows the card's name as %q, want the card's text as written", got)
	}
	in.mu.RLock()
	probed := stacks[0].Graph
	in.mu.RUnlock()
	if !probed.Probed {
		t.Fatal("the stack's graph is not the probed one after the button was pressed")
	}
	dom := c.open(srv+"/", "hostile-stacks-probed")
	assertCardsMatch(t, "the Stacks page after the probe", cardsOf(t, dom), probed.Nodes)

	// Every page, the hostile text on it read as text.
	shows := func(where string, want ...string) {
		t.Helper()
		// textContent: a collapsed preview is text too.
		body := c.textContent()
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s does not show %q as text", where, w)
			}
		}
	}
	for _, page := range []struct {
		path string
		want []string
	}{
		{"/", nil},
		{"/tools", nil},
		{"/mcp", xssPayloads},
		{"/skills", xssPayloads},
		{"/why?stack=hostile&capability=team/hostile", nil},
		{"/why?stack=hostile&capability=mcp/records/echo", nil},
		{"/why?stack=hostile&capability=" + url.QueryEscape(xssPayloads[0]), []string{xssPayloads[0]}},
		{"/why?stack=" + url.QueryEscape(xssPayloads[1]) + "&capability=fs.read", nil},
		{"/tasks", nil},
	} {
		c.open(srv+page.path, "")
		shows(page.path, page.want...)
	}
	c.click(`[data-task] a[href^="/task?"]`, `p.outcome`, "hostile-task")
	// The recorded results are JSON: each payload is there, its quotes
	// escaped by the encoding.
	shows("the task page", "<script>document.documentElement", `"><img src=x onerror=`, "' onmouseover='", "javascript:document", "</pre><svg onload=", "pablo-xss-5")
}

// TestInspectorLiveTaskInABrowser opens, in headless Chromium, the page
// of a task another process is running (its lease live, on a shared
// store) and leaves it there: as the other process records an event and
// then ends its lease, the page the browser holds reloads itself and
// shows the new event count, then the recovery report, with no
// navigation by the test and no script on the page.
func TestInspectorLiveTaskInABrowser(t *testing.T) {
	c := newChromium(t)
	at := time.Date(2026, 12, 5, 3, 4, 5, 0, time.UTC)
	mem := ledger.NewMemoryStore()
	recs := liveTaskRecords(t, at)
	if err := mem.Append(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	store := &leasedStore{MemoryStore: mem}
	store.live.Store(true)
	rc := readinessCases(t)[0]
	p, err := parseArgs(rc.args, "inspect")
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := loadStacks(context.Background(), p, inspectHost(rc.bubblewrap))
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInspector(stacks, store, false)
	if err != nil {
		t.Fatal(err)
	}
	in.refresh = 1
	srv := httptestServer(t, in)

	c.open(srv+"/task?id=task-live", "live-task-running")
	if got := c.text(`[data-live="true"]`); !strings.Contains(got, "3 events so far") {
		t.Fatalf("the page of a live task says %q", got)
	}
	// The other process records one more event.
	last := recs[len(recs)-1]
	next := ledger.Record{TaskID: last.TaskID, N: last.N + 1, Time: at, Kind: ledger.RecordEvent, Event: ledger.Event{
		Type: string(event.RunStarted), RootID: last.TaskID, AgentID: "root", Time: at, RootSeq: last.N + 1, Seq: last.N + 1, Payload: json.RawMessage(`{"type":"run.started"}`)}}
	if err := mem.Append(context.Background(), []ledger.Record{next}); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.waitText("4 events so far", chromiumActionTimeout); !ok {
		t.Fatalf("the page the browser holds never showed the recorded event; it shows:\n%s", got)
	}
	c.settled("the reloaded page of a live task", "live-task-reloaded")
	// The other process ends its lease.
	store.live.Store(false)
	if got, ok := c.waitText("interrupted (no terminal outcome recorded)", chromiumActionTimeout); !ok {
		t.Fatalf("the page the browser holds never showed the recovery report; it shows:\n%s", got)
	}
	if dom := c.settled("the page of a settled task", "live-task-settled"); strings.Contains(dom, "data-live") || strings.Contains(dom, "http-equiv") {
		t.Error("the page of a task whose lease has ended still reloads")
	}
}

// httptestServer serves h for the test and returns its URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
