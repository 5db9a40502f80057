package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/pabloagent/pablo/graph"
)

// attrValues are the values of attribute key on a page, in document
// order, each with the element's text.
func attrValues(t *testing.T, page, key string) (values, texts []string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var text func(*html.Node, *strings.Builder)
	text = func(n *html.Node, b *strings.Builder) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			text(ch, b)
		}
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if v, ok := attr(n, key); ok {
				var b strings.Builder
				text(n, &b)
				values, texts = append(values, v), append(texts, b.String())
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return values, texts
}

// TestInspectorLaunchCardsSayWhatTheGraphSays: on every readiness
// golden's deployment, the stack's launch preview lists exactly the
// usable tools, MCP tools, Skills, remotes and models of `pablo graph
// --json`, an approval-gated one marked as asking; its adapter card names
// every model and says a model lacks tool calls exactly when a route that
// lists it requires them and it declares none; its audit card
// says whether the trace captures content.
func TestInspectorLaunchCardsSayWhatTheGraphSays(t *testing.T) {
	sawGated, sawLacking := false, false
	for _, c := range readinessCases(t) {
		t.Run(c.name, func(t *testing.T) {
			srv, err := tryInspector(t, c.args, c.bubblewrap)
			if err != nil {
				t.Skipf("the CLI refuses this deployment too: %v", err)
			}
			var out bytes.Buffer
			h := inspectHost(c.bubblewrap)
			h.stdout = &out
			if rc := run(context.Background(), append([]string{"graph", "--json"}, c.args...), h); rc != 0 {
				t.Fatalf("graph --json exited %d", rc)
			}
			var g graph.Graph
			if err := json.Unmarshal(out.Bytes(), &g); err != nil {
				t.Fatal(err)
			}
			_, page := get(t, srv, "/")
			offered, texts := attrValues(t, page, "data-offered")
			var want []string
			for _, n := range g.Nodes {
				switch n.Kind {
				case graph.KindTool, graph.KindMCPTool, graph.KindSkill, graph.KindRemote, graph.KindModel:
					if n.State.Usable() {
						want = append(want, n.ID)
					}
				}
			}
			if !slices.Equal(offered, want) {
				t.Errorf("the launch preview offers %q, graph --json's usable nodes are %q", offered, want)
			}
			for i, id := range offered {
				n, _ := g.Node(id)
				if gated := n.State == graph.ApprovalGated; gated != strings.Contains(texts[i], "asks for approval") {
					t.Errorf("the launch preview's %s says %q, the graph says %s", id, texts[i], n.State)
				} else if gated {
					sawGated = true
				}
			}
			adapters, atexts := attrValues(t, page, "data-adapter")
			var models []string
			for _, n := range g.Nodes {
				if n.Kind == graph.KindModel {
					models = append(models, n.ID)
				}
			}
			if !slices.Equal(adapters, models) {
				t.Errorf("the adapter card names %q, the graph's models are %q", adapters, models)
			}
			for i, id := range adapters {
				n, _ := g.Node(id)
				lacks := strings.Contains(atexts[i], "lacks tool_calls")
				declared := slices.Contains(strings.Split(n.Attributes["capabilities"], ","), "tool_calls")
				required := false
				for _, e := range g.Edges {
					if r, _ := g.Node(e.From); e.To == id && r.Kind == graph.KindRoute {
						required = required || slices.Contains(strings.Split(r.Attributes["required_capabilities"], ","), "tool_calls")
					}
				}
				if lacks != (required && !declared) {
					t.Errorf("the adapter card says %q of %s, whose capabilities are %q (a route requires tool calls: %t)", atexts[i], id, n.Attributes["capabilities"], required)
				}
				sawLacking = sawLacking || lacks
			}
			capture, _ := attrValues(t, page, "data-capture")
			if !slices.Equal(capture, []string{"false"}) {
				t.Errorf("the audit card says capture %q, the deployment captures no content", capture)
			}
		})
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "captured.toml")
	if err := os.WriteFile(cfg, []byte("schema_version = 1\n[options.shell]\nenabled = false\n[options.trace]\npath = { base = \"workspace\", path = \"trace.jsonl\" }\ncapture_content = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, newTestInspector(t, []string{"--config", cfg, "--bind", "workspace=" + dir}, ""), "/")
	if capture, texts := attrValues(t, page, "data-capture"); !slices.Equal(capture, []string{"true"}) || !strings.Contains(texts[0], "captured") || !strings.Contains(page, "workspace:trace.jsonl") {
		t.Errorf("the audit card of a deployment that captures content says %q %q", capture, texts)
	}
	if !sawGated || !sawLacking {
		t.Errorf("no golden showed an approval-gated offer (%t) or a model lacking what its route requires (%t)", sawGated, sawLacking)
	}
}
