package pablo

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/engine"

	"github.com/pabloagent/pablo/authority"
)

// Live output cut by its per-call bound in the middle of a secret releases
// no piece of it: the held-back start is masked, not released in clear,
// while the output before it streams unchanged.
func TestLiveOutputCutByItsBoundReleasesNoPieceOfASecret(t *testing.T) {
	pad := strings.Repeat(" ", engine.MaxStreamedOutput-6)
	tool := &sayTool{own: []string{pad, knownSecret + "\n"}}
	set, _ := authority.New(authority.Config{Host: []authority.ID{"test.say"}})
	script := `{"turns":[{"text":["Saying."],"tool_calls":[{"name":"test.say","arguments":{"chunks":[]}}]},{"text":["Done."]}]}`
	r := runRecordedOpts(t, RuntimeOptions{Authority: set, Catalogs: []ToolCatalog{tool}}, script, knownSecret)
	assertNoLeak(t, r, knownSecret)
	out, _, masked := r.streamText(event.ToolOutput)
	if out != pad+"[redacted]" || masked != 1 {
		t.Fatalf("streamed %q… with %d masks", out[len(out)-min(len(out), 20):], masked)
	}
}

// A tool name the model wrote that is not in the catalog is recorded with
// its secrets masked (the store kept it in clear).
func TestModelWrittenToolNameIsRecordedMasked(t *testing.T) {
	script := `{"turns":[{"text":["Calling."],"tool_calls":[{"name":"x` + knownSecret + `-` + awsKey + `","arguments":{}}]},{"text":["Done."]}]}`
	r := runRecorded(t, "[options.shell]\nenabled = false\n", script, nil, nil, knownSecret)
	if r.obj.Outcome.Status != event.StatusPolicyDenied {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s", b)
	}
	r.requests = nil
	assertNoLeak(t, r, knownSecret, awsKey)
}

// A call ID the model (or its provider) wrote that holds a secret is not
// recorded: the call is recorded under an ID of the loop's own, and the
// model still gets its result under the ID it wrote.
func TestModelWrittenCallIDHoldingASecretIsNotRecorded(t *testing.T) {
	script := `{"turns":[{"text":["Calling."],"tool_calls":[{"id":"` + awsKey + `","name":"fs_read","arguments":{"path":"a.txt"}}]},{"text":["Done."]}]}`
	r := runRecorded(t, "[options.shell]\nenabled = false\n", script, func(ws string) { os.WriteFile(filepath.Join(ws, "a.txt"), []byte("x"), 0o600) }, nil)
	if r.obj.Outcome.Status != event.StatusCompleted || len(r.requests) != 2 || !strings.Contains(r.requests[1], awsKey) {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s after %d requests", b, len(r.requests))
	}
	r.requests = nil
	assertNoLeak(t, r, awsKey)
}

// An MCP server writes its tools' descriptions: one that holds a
// credential or a suspected secret reaches the model masked, in the tool
// definitions of every request.
func TestMCPToolDefinitionsReachTheModelMasked(t *testing.T) {
	bin := buildFaultServer(t)
	script := `{"turns":[{"text":["Done."]}]}`
	body := "[options.shell]\nenabled = false\n" + mcpServerTOML(bin, "drift", "")
	body = strings.Replace(body, `"drift"]`, `"drift", "-desc", "Echoes. Token `+knownSecret+`, key `+awsKey+`."]`, 1)
	r := runRecorded(t, body, script, nil, nil, knownSecret)
	if r.obj.Outcome.Status != event.StatusCompleted || len(r.requests) != 1 {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s after %d requests", b, len(r.requests))
	}
	if !strings.Contains(r.requests[0], "Echoes. Token [redacted], key [redacted].") {
		t.Fatalf("the model was not shown the masked description: %.600s", r.requests[0])
	}
	assertNoLeak(t, r, knownSecret, awsKey)
}

// A deployment error never holds a suspected secret: a token pasted where
// a credential name belongs is masked in the diagnostic, which still says
// what to change.
func TestConfigErrorHoldsNoSuspectedSecret(t *testing.T) {
	const token = "sk-proj-Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7nP9rS1tV3x"
	for _, doc := range []string{
		"schema_version = 1\n[options.mcp.servers.x]\ntransport = \"http\"\nurl = \"https://mcp.example.com/mcp\"\nheaders = { authorization = \"" + token + "\" }\n",
		"schema_version = 1\n[options.mcp.servers.x]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\nenv = { TOKEN = \"" + token + "\" }\n",
	} {
		_, err := loadString(t, doc)
		var ce *deployment.Error
		if !errors.As(err, &ce) || ce.Code != config.CodeInvalidValue || !strings.Contains(ce.Message, "no credential named") {
			t.Fatalf("got %v", err)
		}
		if b, _ := json.Marshal(ce); strings.Contains(err.Error()+string(b), token[8:20]) {
			t.Fatalf("the diagnostic holds the token: %v", err)
		}
	}
}

// Output cut by the shell's capture bound in the middle of a secret
// leaves no piece of it: neither the live tool.output events nor the
// result's stdout, whose tail that could still start a secret is masked.
func TestOutputCutByTheCaptureBoundReleasesNoPieceOfASecret(t *testing.T) {
	script := `{"turns":[{"text":["Running."],"tool_calls":[{"name":"shell_run","arguments":{"command":"cat out.txt","cwd":".","max_output_bytes":1024}}]},{"text":["Done."]}]}`
	r := runRecorded(t, "[options.shell]\nenabled = true\n", script, func(ws string) {
		os.WriteFile(filepath.Join(ws, "out.txt"), []byte(strings.Repeat(" ", 1018)+knownSecret+"\n"), 0o600)
	}, nil, knownSecret)
	if r.obj.Outcome.Status != event.StatusLimitExceeded {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s", b)
	}
	assertNoLeak(t, r, knownSecret)
	out, _, _ := r.streamText(event.ToolOutput)
	if out != strings.Repeat(" ", 1018)+"[redacted]" {
		t.Fatalf("streamed %q", out[max(0, len(out)-20):])
	}
	for _, ev := range r.events {
		if ev.Type == event.ToolFinished && (ev.Masked != 1 || !strings.Contains(string(ev.Result), `[redacted]","stderr"`)) {
			t.Fatalf("tool.finished %d masks: %s", ev.Masked, ev.Result)
		}
	}
}

// A secret the edges of an fs.read page cut is masked by the file around
// it: reading a file in pages leaves no piece of a secret on either page.
func TestPagedReadLeavesNoPieceOfASecret(t *testing.T) {
	script := `{"turns":[{"text":["Reading."],"tool_calls":[` +
		`{"id":"a","name":"fs_read","arguments":{"path":"k.txt","max_bytes":10}},` +
		`{"id":"b","name":"fs_read","arguments":{"path":"k.txt","offset":10,"max_bytes":20}},` +
		`{"id":"c","name":"fs_read","arguments":{"path":"k.txt","offset":30}}]},{"text":["Done."]}]}`
	r := runRecorded(t, "[options.shell]\nenabled = false\n", script, func(ws string) {
		os.WriteFile(filepath.Join(ws, "k.txt"), []byte("key: "+knownSecret+" id "+awsKey+"\n"), 0o600)
	}, nil, knownSecret)
	if r.obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s", b)
	}
	assertNoLeak(t, r, knownSecret, awsKey)
	var texts []string
	for _, ev := range r.events {
		if ev.Type == event.ToolFinished {
			var res struct{ Filesystem struct{ Text string } }
			json.Unmarshal(ev.Result, &res)
			texts = append(texts, res.Filesystem.Text)
			if ev.Masked < 1 {
				t.Errorf("%s counts no mask", ev.Result)
			}
		}
	}
	if strings.Join(texts, "|") != "key: [redacted]|[redacted] id [redacted]|[redacted]\n" {
		t.Fatalf("pages %q", texts)
	}
}

// A matching line that fs.search cuts at MaxMatchTextBytes is masked with
// what follows the cut, so no piece of a secret the cut splits is returned.
func TestSearchLineCutLeavesNoPieceOfASecret(t *testing.T) {
	script := `{"turns":[{"text":["Searching."],"tool_calls":[` +
		`{"id":"a","name":"fs_search","arguments":{"path":".","query":"needle"}}]},{"text":["Done."]}]}`
	r := runRecorded(t, "[options.shell]\nenabled = false\n", script, func(ws string) {
		line := "needle " + strings.Repeat("x", 8192-7-10) + " " + knownSecret + " and " + awsKey + "\n"
		os.WriteFile(filepath.Join(ws, "k.txt"), []byte(line), 0o600)
	}, nil, knownSecret)
	if r.obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s", b)
	}
	assertNoLeak(t, r, knownSecret, awsKey)
	for _, ev := range r.events {
		if ev.Type == event.ToolFinished && ev.Masked < 1 {
			t.Errorf("%.200s counts no mask", ev.Result)
		}
	}
}

// A diagnostic that quotes a value shortens it only after masking it, so a
// token the cut would split is never echoed in part.
func TestConfigErrorMasksBeforeItShortens(t *testing.T) {
	const token = "AKIAIOSFODNN7EXAMPLQ"
	// Wherever the 120-byte cut of a quoted URL falls in the token, no
	// piece of the token's body is echoed.
	for pad := 85; pad <= 110; pad++ {
		url := "mcp.example.com/" + strings.Repeat("a", pad) + "/" + token
		doc := "schema_version = 1\n[options.mcp.servers.x]\ntransport = \"http\"\nurl = \"" + url + "\"\n"
		_, err := loadString(t, doc)
		var ce *deployment.Error
		if !errors.As(err, &ce) {
			t.Fatalf("got %v", err)
		}
		if b, _ := json.Marshal(ce); strings.Contains(err.Error()+string(b), token[:8]) {
			t.Fatalf("pad %d: the diagnostic holds a piece of the token: %v", pad, err)
		}
	}
}
