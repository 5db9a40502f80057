package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
)

// marker is the credential value planted for the secrets test, with
// distinctive pieces (as the root's secrets tests plant theirs).
const marker = "Tk9-Qm4Lz7-Wp2Vx-acp"

// leaks returns a piece of secret (5 bytes or more) found in text.
func leaks(text, secret string) string {
	for n := len(secret); n >= 5; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(text, secret[i:i+n]) {
				return secret[i : i+n]
			}
		}
	}
	return ""
}

// No credential value reaches a frame: a provider that echoes its key in
// its text, a file that holds the key read by fs.read (a tool_call of kind
// read), all through the real provider path of a deployment.
func TestNoCredentialValueInAnyFrame(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if calls.Add(1) == 1 {
			args, _ := json.Marshal(`{"path":"evidence.md"}`)
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"Reading, key `+key[:6]+`"},"finish_reason":null}]}`+"\n\n")
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":`+jsonString(key[6:])+`,"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"fs_read","arguments":`+string(args)+`}}]},"finish_reason":"tool_calls"}]}`+"\n\n")
		} else {
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"The key is "},"finish_reason":null}]}`+"\n\n")
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":`+jsonString(key)+`},"finish_reason":"stop"}]}`+"\n\n")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("the key: "+marker+"\n"), 0o600)
	doc := "schema_version = 1\n[options.shell]\nenabled = false\n" +
		"[credentials.local]\nconsumer = \"provider.openai_compatible\"\nsources = [{ kind = \"environment\", name = \"LOCAL_KEY\" }]\n" +
		"[options.model]\nprovider = \"openai_compatible\"\nid = \"m\"\ncredential = \"local\"\nendpoint = \"" + srv.URL + "/v1/chat/completions\"\n"
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{LookupEnv: func(n string) (string, bool) { return marker, n == "LOCAL_KEY" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sessions, err := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }})
	if err != nil {
		t.Fatal(err)
	}
	p := serve(t, sessions, acp.Options{Clock: newFakeClock()})
	p.initialize(acp.ExtV2, acp.ExtTaskV2, acp.ExtModelRoute)
	sid := p.newSession(2, ws)
	p.request(3, "session/prompt", textPrompt(sid, "What is the key?"))
	frames, answer := p.until(3)
	if stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
	read, echoed := false, false
	for _, f := range append(frames, answer) {
		echoed = echoed || strings.Contains(f.raw, "The key is")
		if piece := leaks(f.raw, marker); piece != "" {
			t.Fatalf("the frame holds %q of the credential: %s", piece, f.raw)
		}
		if f.Method == "session/update" && f.update()["sessionUpdate"] == "tool_call" && f.update()["kind"] == "read" {
			read = true
		}
	}
	if !read || !echoed {
		t.Fatalf("no tool_call of kind read (%v) or no echo of the key (%v)", read, echoed)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
