package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/pabloagent/pablo/graph"
)

// inspectCase is one readiness golden's deployment, written to a
// scratch directory: the command-line arguments that load it and the
// host the golden ran with.
type inspectCase struct {
	name       string
	args       []string
	capability string
	bubblewrap string
	probed     bool
	golden     string
}

// readinessCases writes every readiness golden's files, as the golden
// test does, and returns the arguments that load each.
func readinessCases(t *testing.T) []inspectCase {
	t.Helper()
	var out []inspectCase
	for _, c := range goldenCases() {
		if !strings.HasPrefix(c.name, "readiness-") {
			continue
		}
		tmp := t.TempDir()
		ic := inspectCase{name: c.name}
		for _, step := range c.steps {
			args := make([]string, len(step))
			for i, a := range step {
				args[i] = strings.ReplaceAll(a, "$TMP", tmp)
			}
			switch args[0] {
			case "write":
				if err := os.MkdirAll(filepath.Dir(args[1]), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(args[1], []byte(args[2]), 0o600); err != nil {
					t.Fatal(err)
				}
			case "bubblewrap":
				ic.bubblewrap = args[1]
			case "why":
				ic.capability = args[2]
				ic.args = args[3:]
				if i := slices.Index(ic.args, "--probe"); i >= 0 {
					ic.probed = true
					ic.args = slices.Delete(ic.args, i, i+1)
				}
			}
		}
		b, err := os.ReadFile(filepath.Join("testdata", "golden", c.name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		ic.golden = strings.ReplaceAll(string(b), "$TMP", tmp)
		out = append(out, ic)
	}
	if len(out) == 0 {
		t.Fatal("no readiness golden case")
	}
	return out
}

// goldenStdout is the stdout of the golden's step whose command line
// starts with prefix.
func goldenStdout(t *testing.T, golden, prefix string) string {
	t.Helper()
	i := strings.Index(golden, "$ "+prefix)
	if i < 0 {
		t.Fatalf("the golden has no step %q", prefix)
	}
	rest := golden[i:]
	j := strings.Index(rest, "--- stdout\n")
	rest = rest[j+len("--- stdout\n"):]
	return rest[:strings.Index(rest, "--- stderr")]
}

func inspectHost(bubblewrap string) *host {
	wd, _ := os.Getwd()
	return &host{stdout: io.Discard, stderr: io.Discard, lookupEnv: func(string) (string, bool) { return "", false }, workDir: wd, bubblewrap: bubblewrap}
}

// newTestInspector loads args as `pablo inspect` does and serves it.
func newTestInspector(t *testing.T, args []string, bubblewrap string) *httptest.Server {
	t.Helper()
	srv, err := tryInspector(t, args, bubblewrap)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func tryInspector(t *testing.T, args []string, bubblewrap string) (*httptest.Server, error) {
	t.Helper()
	p, err := parseArgs(args, "inspect")
	if err != nil {
		return nil, err
	}
	stacks, err := loadStacks(context.Background(), p, inspectHost(bubblewrap))
	if err != nil {
		return nil, err
	}
	in, err := newInspector(stacks, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	return srv, nil
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// card is what a page says of one node: its readiness and reasons.
type card struct {
	state   string
	reasons []graph.Reason
}

// cardsOf parses a page: every element with data-node and data-state,
// and the reasons listed inside it.
func cardsOf(t *testing.T, page string) map[string]card {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]card{}
	var walk func(n *html.Node, in string)
	walk = func(n *html.Node, in string) {
		if n.Type == html.ElementNode {
			if id, ok := attr(n, "data-node"); ok {
				st, _ := attr(n, "data-state")
				if _, dup := out[id]; !dup {
					out[id] = card{state: st}
					in = id
				} else {
					in = ""
				}
			}
			if code, ok := attr(n, "data-code"); ok && in != "" {
				c := out[in]
				c.reasons = append(c.reasons, graph.Reason{Code: code, Detail: detailOf(n)})
				out[in] = c
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch, in)
		}
	}
	walk(doc, "")
	return out
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// detailOf is the text of a reason's detail span.
func detailOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node, bool)
	walk = func(n *html.Node, on bool) {
		if n.Type == html.ElementNode {
			if c, _ := attr(n, "class"); c == "detail" {
				on = true
			}
		}
		if on && n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch, on)
		}
	}
	walk(n, false)
	return b.String()
}

// assertCardsMatch checks that every node of g has a card on the page
// with g's readiness and reasons (code and detail, in order).
func assertCardsMatch(t *testing.T, where string, cards map[string]card, nodes []graph.Node) {
	t.Helper()
	for _, n := range nodes {
		c, ok := cards[n.ID]
		if !ok {
			t.Errorf("%s: no card for node %s", where, n.ID)
			continue
		}
		if c.state != string(n.State) {
			t.Errorf("%s: card %s says %q, graph --json says %q", where, n.ID, c.state, n.State)
		}
		if len(c.reasons) != len(n.Reasons) {
			t.Errorf("%s: card %s lists %d reasons, graph --json %d: %+v", where, n.ID, len(c.reasons), len(n.Reasons), c.reasons)
			continue
		}
		for i, r := range n.Reasons {
			if c.reasons[i].Code != r.Code || c.reasons[i].Detail != r.Detail {
				t.Errorf("%s: card %s reason %d is %q %q, graph --json says %q %q", where, n.ID, i, c.reasons[i].Code, c.reasons[i].Detail, r.Code, r.Detail)
			}
		}
	}
}

// TestInspectorCardsSayWhatGraphAndWhySay renders the Stacks page of every
// readiness golden's deployment and checks each card's readiness and
// reasons against `pablo graph --json` (the golden's own output when the
// golden is offline, a live run otherwise) and each card's why page
// against `pablo why --json` for that capability.
func TestInspectorCardsSayWhatGraphAndWhySay(t *testing.T) {
	for _, c := range readinessCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var errOut bytes.Buffer
			h := inspectHost(c.bubblewrap)
			h.stderr = &errOut
			if rc := run(context.Background(), append([]string{"graph"}, c.args...), h); rc != 0 {
				// A deployment the CLI refuses, the inspector refuses
				// with the same reason.
				_, err := tryInspector(t, c.args, c.bubblewrap)
				if err == nil || !strings.Contains(errOut.String(), err.Error()) {
					t.Fatalf("graph refused the deployment (%s) but the inspector said %v", errOut.String(), err)
				}
				return
			}
			srv := newTestInspector(t, c.args, c.bubblewrap)
			code, page := get(t, srv, "/")
			if code != http.StatusOK {
				t.Fatalf("GET / answered %d: %s", code, page)
			}
			cards := cardsOf(t, page)
			var g graph.Graph
			if !c.probed {
				if err := json.Unmarshal([]byte(goldenStdout(t, c.golden, "graph --json")), &g); err != nil {
					t.Fatal(err)
				}
				assertCardsMatch(t, "golden graph --json", cards, g.Nodes)
			}
			var out bytes.Buffer
			h = inspectHost(c.bubblewrap)
			h.stdout = &out
			if rc := run(context.Background(), append([]string{"graph", "--json"}, c.args...), h); rc != 0 {
				t.Fatalf("graph --json exited %d", rc)
			}
			g = graph.Graph{}
			if err := json.Unmarshal(out.Bytes(), &g); err != nil {
				t.Fatal(err)
			}
			assertCardsMatch(t, "graph --json", cards, g.Nodes)
			for _, n := range g.Nodes {
				assertWhyPageMatches(t, srv, c, whyTarget(n))
			}
			if !c.probed {
				var golden graph.Explanation
				if err := json.Unmarshal([]byte(goldenStdout(t, c.golden, "why --json")), &golden); err != nil {
					t.Fatal(err)
				}
				assertWhyPage(t, srv, "stack="+url.QueryEscape(stackName(c.args[1])), c.capability, &golden)
			}
		})
	}
}

// assertWhyPageMatches compares the why page of capability with a live
// `pablo why --json`.
func assertWhyPageMatches(t *testing.T, srv *httptest.Server, c inspectCase, capability string) {
	t.Helper()
	var out bytes.Buffer
	h := inspectHost(c.bubblewrap)
	h.stdout = &out
	run(context.Background(), append([]string{"why", "--json", capability}, c.args...), h)
	var e graph.Explanation
	if err := json.Unmarshal(out.Bytes(), &e); err != nil {
		t.Fatalf("why --json %s: %v: %s", capability, err, out.String())
	}
	assertWhyPage(t, srv, "stack="+url.QueryEscape(stackName(c.args[1])), capability, &e)
}

func assertWhyPage(t *testing.T, srv *httptest.Server, stack, capability string, e *graph.Explanation) {
	t.Helper()
	code, page := get(t, srv, "/why?"+stack+"&capability="+url.QueryEscape(capability))
	if code != http.StatusOK {
		t.Fatalf("why %s answered %d: %s", capability, code, page)
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var admitted string
	var causes []string
	var find func(*html.Node, bool)
	find = func(n *html.Node, inCauses bool) {
		if n.Type == html.ElementNode {
			if v, ok := attr(n, "data-admitted"); ok {
				admitted = v
			}
			if cl, _ := attr(n, "class"); cl == "causes" {
				inCauses = true
			}
			if code, ok := attr(n, "data-code"); ok && inCauses {
				causes = append(causes, code)
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			find(ch, inCauses)
		}
	}
	find(doc, false)
	if want := map[bool]string{true: "true", false: "false"}[e.Admitted]; admitted != want {
		t.Errorf("why page of %s says admitted=%q, why --json %s", capability, admitted, want)
	}
	var want []string
	for _, c := range e.Causes {
		want = append(want, c.Code)
		if !strings.Contains(page, html.EscapeString(c.Detail)) {
			t.Errorf("why page of %s lacks the cause %q", capability, c.Detail)
		}
	}
	if !slices.Equal(causes, want) {
		t.Errorf("why page of %s lists causes %q, why --json %q", capability, causes, want)
	}
	chain := cardsOf(t, page)
	assertCardsMatch(t, "why --json chain of "+capability, chain, e.Chain)
}

// TestInspectorServesEveryPage fetches each page of each readiness
// deployment: every one answers 200 with HTML, and a page that is not
// there answers 404.
func TestInspectorServesEveryPage(t *testing.T) {
	for _, c := range readinessCases(t) {
		t.Run(c.name, func(t *testing.T) {
			srv, err := tryInspector(t, c.args, c.bubblewrap)
			if err != nil {
				t.Skipf("the CLI refuses this deployment too: %v", err)
			}
			for _, path := range []string{"/", "/stacks", "/tools", "/mcp", "/skills", "/style.css"} {
				code, body := get(t, srv, path)
				if code != http.StatusOK || body == "" {
					t.Errorf("GET %s answered %d", path, code)
				}
			}
			if code, _ := get(t, srv, "/nothing"); code != http.StatusNotFound {
				t.Errorf("GET /nothing answered %d, want 404", code)
			}
			if code, _ := get(t, srv, "/why?stack=nope&capability=fs.read"); code != http.StatusNotFound {
				t.Errorf("why of an unknown stack answered %d, want 404", code)
			}
			if code, _ := get(t, srv, "/why?stack="+stackName(c.args[1])+"&capability=no.such"); code != http.StatusNotFound {
				t.Errorf("why of an unknown capability answered %d, want 404", code)
			}
		})
	}
}

// xssPayloads are hostile strings a Skill, a server or a model may write:
// a script element, attribute-breaking markup and javascript: URLs. Each,
// when it runs, marks the document with a data-pwned attribute, which the
// browser test looks for.
var xssPayloads = []string{
	`<script>document.documentElement.setAttribute("data-pwned","pablo-xss-1")</script>`,
	`"><img src=x onerror=document.documentElement.setAttribute("data-pwned","pablo-xss-2")>`,
	`' onmouseover='document.documentElement.setAttribute("data-pwned","pablo-xss-3")`,
	`javascript:document.documentElement.setAttribute("data-pwned","pablo-xss-4")`,
	`</pre><svg onload=document.documentElement.setAttribute("data-pwned","pablo-xss-5")>`,
}

// TestInspectorEscapesHostileText renders a stack whose Skill
// description and instructions, and a why request's capability, hold the
// XSS corpus: no payload appears raw on any page, and no page holds a
// script element, an event-handler attribute or a javascript: URL.
func TestInspectorEscapesHostileText(t *testing.T) {
	tmp := t.TempDir()
	body := strings.Join(xssPayloads, "\n")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tmp, "skills", "hostile", "SKILL.md"), "---\nname: hostile\ndescription: '"+strings.ReplaceAll(xssPayloads[0]+" "+xssPayloads[1]+" "+xssPayloads[3], "'", "''")+"'\n---\n"+body+"\n")
	write(filepath.Join(tmp, "stack.toml"), "schema_version = 1\n[options.shell]\nenabled = false\n[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \".\" }\n")
	srv := newTestInspector(t, []string{"--config", filepath.Join(tmp, "stack.toml"), "--bind", "workspace=" + tmp, "--bind", "skills=" + filepath.Join(tmp, "skills")}, "")
	_, skillsPage := get(t, srv, "/skills")
	if !strings.Contains(skillsPage, "pablo-xss-1") || !strings.Contains(skillsPage, "pablo-xss-5") {
		t.Fatalf("the Skills page does not show the hostile Skill at all:\n%s", skillsPage)
	}
	pages := []string{"/", "/tools", "/mcp", "/skills", "/why?stack=stack&capability=team/hostile"}
	for _, p := range xssPayloads {
		pages = append(pages, "/why?stack=stack&capability="+url.QueryEscape(p), "/why?stack="+url.QueryEscape(p)+"&capability=fs.read")
	}
	for _, path := range pages {
		_, page := get(t, srv, path)
		for _, p := range xssPayloads {
			if strings.Contains(page, p) {
				t.Errorf("GET %s shows %q raw", path, p)
			}
		}
		assertInert(t, path, page)
	}
}

// assertInert parses page as a browser does and fails on anything that
// would run: a script element, an on* attribute, a javascript: URL.
func assertInert(t *testing.T, path, page string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if n.Data == "script" || n.Data == "svg" || n.Data == "img" || n.Data == "iframe" {
				t.Errorf("GET %s holds a <%s> element", path, n.Data)
			}
			for _, a := range n.Attr {
				if strings.HasPrefix(strings.ToLower(a.Key), "on") {
					t.Errorf("GET %s: <%s> has the event handler %s=%q", path, n.Data, a.Key, a.Val)
				}
				if (a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
					t.Errorf("GET %s: <%s %s=%q> is a javascript: URL", path, n.Data, a.Key, a.Val)
				}
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
}

// TestInspectorIsReadOnlyAndLoopbackOnly: a write method is refused; on
// a loopback listener, a request addressed to another host (DNS
// rebinding) is refused; every page forbids scripts by its content
// security policy.
func TestInspectorIsReadOnlyAndLoopbackOnly(t *testing.T) {
	c := readinessCases(t)[0]
	srv := newTestInspector(t, c.args, c.bubblewrap)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL+"/", strings.NewReader("x"))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s / answered %d, want 405", m, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	req.Host = "attacker.example:80"
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for host attacker.example answered %d, want 421", resp.StatusCode)
	}
	resp, err = srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("the content security policy %q does not forbid scripts", csp)
	}
}

// TestInspectListensOnLoopbackUnlessTold: the default address is
// loopback; --listen on another address is accepted only with a printed
// warning.
func TestInspectListensOnLoopbackUnlessTold(t *testing.T) {
	c := readinessCases(t)[0]
	for _, tc := range []struct {
		listen []string
		warn   bool
	}{{nil, false}, {[]string{"--listen", "0.0.0.0:0"}, true}} {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		var errb bytes.Buffer
		h := inspectHost(c.bubblewrap)
		h.stdout, h.stderr = pw, &errb
		done := make(chan error, 1)
		go func() { done <- inspectCommand(ctx, append(append([]string{}, c.args...), tc.listen...), h) }()
		line := make([]byte, 256)
		n, _ := pr.Read(line)
		go io.Copy(io.Discard, pr)
		got := string(line[:n])
		u := strings.TrimSpace(strings.TrimPrefix(got, "pablo inspect: serving "))
		if tc.listen == nil && !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("the default address is %q, want loopback", got)
		}
		if tc.listen != nil && !strings.HasPrefix(u, "http://0.0.0.0:") && !strings.HasPrefix(u, "http://[::]:") {
			t.Errorf("--listen 0.0.0.0:0 printed %q", got)
		}
		if strings.Contains(errb.String(), "warning") != tc.warn {
			t.Errorf("listen %v: warning printed %t, want %t: %q", tc.listen, !tc.warn, tc.warn, errb.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("inspect ended with %v", err)
		}
		pw.Close()
	}
}

// TestInspectorTasksPageAndEscapeOutputs runs two scripted tasks whose
// output holds the XSS corpus into a bbolt ledger, then serves it opened
// read-only: the Tasks page lists one task a page with a link to the
// next, each task page shows the outcome, the calls with their decisions
// and the output, escaped, and nothing on any page would run.
func TestInspectorTasksPageAndEscapeOutputs(t *testing.T) {
	tmp := t.TempDir()
	text, _ := json.Marshal(strings.Join(xssPayloads, " "))
	script := filepath.Join(tmp, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":["reading"],"tool_calls":[{"name":"fs_read","arguments":{"path":"evidence.md"}}]},{"text":[`+string(text)+`]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(tmp, "ledger.db")
	work := filepath.Join(tmp, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	// The tool's output, which the task page shows, is hostile.
	if err := os.WriteFile(filepath.Join(work, "evidence.md"), []byte(strings.Join(xssPayloads, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	demo := []string{"--config", "demo/deployment.toml", "--bind", "workspace=" + work, "--bind", "skills=demo/skills"}
	for range 2 {
		var out, errb bytes.Buffer
		h := inspectHost("")
		h.stdout, h.stderr = &out, &errb
		if rc := run(context.Background(), append([]string{"run", "hostile", "--json", "--script", script, "--store", store}, demo...), h); rc != 0 {
			t.Fatalf("run exited %d: %s %s", rc, out.String(), errb.String())
		}
	}
	p, err := parseArgs(append([]string{"--store", store}, demo...), "inspect")
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
	in.pageSize = 1
	srv := httptest.NewServer(in)
	defer srv.Close()

	code, first := get(t, srv, "/tasks")
	if code != http.StatusOK {
		t.Fatalf("GET /tasks answered %d: %s", code, first)
	}
	assertInert(t, "/tasks", first)
	firstIDs := taskIDs(t, first)
	if len(firstIDs) != 1 || !strings.Contains(first, "/tasks?after="+url.QueryEscape(firstIDs[0])) {
		t.Fatalf("the first page lists %q and no link to the next page:\n%s", firstIDs, first)
	}
	// Each task made two model calls and one tool call (the script's two
	// turns, its fs_read): the Tasks page shows the accounting and times.
	if acc, _ := attrValues(t, first, "data-accounting"); len(acc) != 1 {
		t.Errorf("the Tasks page shows no accounting:\n%s", first)
	} else if _, texts := attrValues(t, first, "data-accounting"); texts[0] != "2" || !strings.Contains(first, "<td>1</td><td>") {
		t.Errorf("the Tasks page's accounting says %q model calls:\n%s", texts[0], first)
	}
	_, second := get(t, srv, "/tasks?after="+url.QueryEscape(firstIDs[0]))
	secondIDs := taskIDs(t, second)
	if len(secondIDs) != 1 || secondIDs[0] == firstIDs[0] || strings.Contains(second, "next page") {
		t.Fatalf("the second page lists %q (first %q), or links further", secondIDs, firstIDs)
	}
	for _, id := range append(firstIDs, secondIDs...) {
		path := "/task?id=" + url.QueryEscape(id)
		code, page := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s answered %d", path, code)
		}
		if !strings.Contains(page, "completed") || !strings.Contains(page, "fs_read") && !strings.Contains(page, "fs.read") {
			t.Errorf("GET %s shows no outcome or call:\n%s", path, page)
		}
		if !strings.Contains(page, "pablo-xss-1") || !strings.Contains(page, "pablo-xss-5") {
			t.Errorf("GET %s does not show the task's output", path)
		}
		if !strings.Contains(page, "model calls 2 · tool calls 1") || !strings.Contains(page, "started ") || !strings.Contains(page, "finished ") {
			t.Errorf("GET %s shows no accounting or times", path)
		}
		// The root's dispatch snapshot: what it was offered, entry by
		// entry, fs.read among them.
		if agents, _ := attrValues(t, page, "data-snapshot"); len(agents) != 1 {
			t.Errorf("GET %s shows the dispatch snapshots of %q, want the root's", path, agents)
		}
		if entries, _ := attrValues(t, page, "data-snapshot-entry"); !slices.Contains(entries, "tool:fs.read") {
			t.Errorf("GET %s shows the snapshot entries %q, want tool:fs.read among them", path, entries)
		}
		for _, p := range xssPayloads {
			if strings.Contains(page, p) {
				t.Errorf("GET %s shows %q raw", path, p)
			}
		}
		assertInert(t, path, page)
	}
	if code, _ := get(t, srv, "/task?id=no-such-task"); code != http.StatusNotFound {
		t.Errorf("an unknown task answered %d, want 404", code)
	}
}

// taskIDs are the task IDs a Tasks page lists.
func taskIDs(t *testing.T, page string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if id, ok := attr(n, "data-task"); ok {
				out = append(out, id)
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return out
}

// TestInspectorProbeIsBoundToTheProcessToken: the Probe button's POST is
// refused without this process's token, with another token and from
// another origin; with it, the stack's graph is the probed one, card for
// card what the golden `pablo graph --json --probe` says (the readiness
// golden of an MCP server that cannot start).
func TestInspectorProbeIsBoundToTheProcessToken(t *testing.T) {
	var c inspectCase
	for _, rc := range readinessCases(t) {
		if rc.name == "readiness-unhealthy-server" {
			c = rc
		}
	}
	if !c.probed {
		t.Fatal("the unhealthy-server golden is no longer probed")
	}
	p, err := parseArgs(c.args, "inspect")
	if err != nil {
		t.Fatal(err)
	}
	h := inspectHost(c.bubblewrap)
	stacks, err := loadStacks(context.Background(), p, h)
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInspector(stacks, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	in.token, in.host = newProbeToken(), h
	srv := httptest.NewServer(in)
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	name := stackName(c.args[1])
	_, mcpPage := get(t, srv, "/mcp")
	if !strings.Contains(mcpPage, `value="`+in.token+`"`) {
		t.Fatalf("the MCP page holds no Probe form with the token:\n%s", mcpPage)
	}
	post := func(token, origin string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/probe", strings.NewReader(url.Values{"token": {token}, "stack": {name}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, bad := range []struct{ token, origin string }{{"", ""}, {newProbeToken(), ""}, {in.token, "http://attacker.example"}} {
		if code := post(bad.token, bad.origin); code != http.StatusForbidden {
			t.Errorf("a probe with token %q origin %q answered %d, want 403", bad.token, bad.origin, code)
		}
	}
	if _, page := get(t, srv, "/"); strings.Contains(page, `data-state="unhealthy"`) {
		t.Fatal("a refused probe probed")
	}
	if code := post(in.token, srv.URL); code != http.StatusSeeOther {
		t.Fatalf("the probe answered %d, want 303", code)
	}
	var g graph.Graph
	if err := json.Unmarshal([]byte(goldenStdout(t, c.golden, "graph --json")), &g); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, srv, "/")
	assertCardsMatch(t, "golden graph --json --probe", cardsOf(t, page), g.Nodes)
}

// TestInspectNeverCreatesALedger: --store naming no database is refused
// with exit 2 and leaves no file behind: the inspector opens a ledger
// read-only, never creating or migrating one.
func TestInspectNeverCreatesALedger(t *testing.T) {
	c := readinessCases(t)[0]
	missing := filepath.Join(t.TempDir(), "none.db")
	var errb bytes.Buffer
	h := inspectHost(c.bubblewrap)
	h.stderr = &errb
	// Should it serve, printing its URL stops it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.stdout = cancelWriter(cancel)
	code := run(ctx, append([]string{"inspect", "--store", missing, "--listen", "127.0.0.1:0"}, c.args...), h)
	if code != 2 || !strings.Contains(errb.String(), "no ledger store at") {
		t.Errorf("inspect --store of a missing database exited %d: %s", code, errb.String())
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("inspect created %s (%v)", missing, err)
	}
}

// cancelWriter cancels on its first write.
type cancelWriter context.CancelFunc

func (c cancelWriter) Write(b []byte) (int, error) { c(); return len(b), nil }
