package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
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

// TestInspectorPagesInABrowser loads the inspector in headless Chromium
// as an operator would: every page of the locked production preset, the
// Stacks page of every readiness golden's deployment (its cards, as the
// browser built them, say what the stack's graph says), and, following
// the links the browser rendered, a why page and a task page of a
// scripted run's ledger. Nothing on any page runs a script, and each
// page's screenshot is saved as a test artifact (go test -artifacts
// keeps them). It skips only where no chromium is installed.
func TestInspectorPagesInABrowser(t *testing.T) {
	browser := chromiumPath()
	if browser == "" {
		t.Skip("no chromium executable on PATH: install the chromium package (scripts/install-peers.sh debian) to run the browser test")
	}
	profile, shots := t.TempDir(), t.ArtifactDir()
	shot := func(name string) string { return filepath.Join(shots, name+".png") }

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
	for _, page := range []struct{ path, name, want string }{
		{"/", "production-stacks", `data-launch="preview"`},
		{"/tools", "production-tools", `data-list="production.read_only shell/commands"`},
		{"/mcp", "production-mcp", `data-node="mcp:evidence"`},
		{"/skills", "production-skills", `data-skill="preset/evidence"`},
		{"/tasks", "production-tasks", `data-task=`},
	} {
		dom := browse(t, browser, profile, srv, page.path, shot(page.name))
		if !strings.Contains(dom, page.want) {
			t.Errorf("the browser's %s lacks %s", page.path, page.want)
		}
		switch page.path {
		case "/":
			assertCardsMatch(t, "the browser's Stacks page", cardsOf(t, dom), stacks[0].Graph.Nodes)
			why := hrefs(t, dom, "/why?")
			if len(why) == 0 {
				t.Fatal("the browser's Stacks page links to no why page")
			}
			target, _ := url.Parse(why[0])
			if wdom := browse(t, browser, profile, srv, target.String(), shot("production-why")); !strings.Contains(wdom, "data-admitted=") {
				t.Errorf("the why page the Stacks page links to (%s) shows no verdict", target)
			}
		case "/tasks":
			tasks := hrefs(t, dom, "/task?")
			if len(tasks) != 1 {
				t.Fatalf("the browser's Tasks page links to %q", tasks)
			}
			if tdom := browse(t, browser, profile, srv, tasks[0], shot("production-task")); !strings.Contains(tdom, "model calls 2 · tool calls 1") || !strings.Contains(tdom, "fs_read") && !strings.Contains(tdom, "fs.read") {
				t.Errorf("the task page the Tasks page links to shows no accounting or call")
			}
		}
	}

	// Every readiness state, as the browser shows each golden's stack.
	for _, c := range readinessCases(t) {
		p, err := parseArgs(c.args, "inspect")
		if err != nil {
			t.Fatal(err)
		}
		stacks, err := loadStacks(context.Background(), p, inspectHost(c.bubblewrap))
		if err != nil {
			continue // the CLI refuses this deployment too (TestInspectorCardsSayWhatGraphAndWhySay)
		}
		in, err := newInspector(stacks, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		dom := browse(t, browser, profile, httptestServer(t, in), "/", shot(c.name))
		assertCardsMatch(t, "the browser's Stacks page of "+c.name, cardsOf(t, dom), stacks[0].Graph.Nodes)
	}
}

// httptestServer serves h for the test and returns its URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
