package pablo

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
)

// toolListModel answers at once and records the tool names it was offered.
type toolListModel struct {
	mu    sync.Mutex
	tools []string
}

func (m *toolListModel) Info() model.Info { return model.Info{Provider: "test", Model: "tools"} }

func (m *toolListModel) Generate(_ context.Context, req *model.Request, _ func(string) error) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = m.tools[:0]
	for _, d := range req.Tools {
		m.tools = append(m.tools, d.Name)
	}
	return &model.Response{Text: "done", FinishReason: model.FinishStop}, nil
}

// options.filesystem.enabled and options.shell.enabled decide which native
// tools a task offers the model.
func TestFilesystemAndShellEnabledDecideTheTools(t *testing.T) {
	for name, c := range map[string]struct {
		body   string
		fs, sh bool
	}{
		"fs only":  {"", true, false},
		"no fs":    {"[options.filesystem]\nenabled = false\n", false, false},
		"shell on": {"[options.shell.sandbox]\nmode = \"off\"\n", true, true},
	} {
		t.Run(name, func(t *testing.T) {
			d := optionsEffectDeployment(t, c.sh, c.body)
			m := &toolListModel{}
			obj, _ := runProviderTask(t, d, HostOptions{Model: m})
			if obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("outcome %+v", obj.Outcome)
			}
			got := strings.Join(m.tools, " ")
			if strings.Contains(got, "fs_read") != c.fs || strings.Contains(got, "shell") != c.sh {
				t.Fatalf("tools offered: %q", got)
			}
		})
	}
}

// optionsEffectDeployment loads body with the shell on or off and a
// workspace holding evidence.md.
func optionsEffectDeployment(t *testing.T, shell bool, body string) *Deployment {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("INV-1042 paid\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "data", "sub"), 0o700)
	doc := "schema_version = 1\n[options.shell]\nenabled = " + map[bool]string{true: "true", false: "false"}[shell] + "\n" + body
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws, "data": filepath.Join(dir, "data")}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// options.run.workspace moves the workspace the tools serve (the
// directory nativeCatalogs opens) to the configured binding and path.
func TestRunWorkspaceIsWhatTheToolsServe(t *testing.T) {
	d := optionsEffectDeployment(t, false, "[options.run]\nworkspace = { base = \"binding\", name = \"data\", path = \"sub\" }\n")
	dir, err := d.Workspace()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dir) != "sub" || filepath.Base(filepath.Dir(dir)) != "data" {
		t.Fatalf("workspace %s", dir)
	}
}

// headerRecorder is a loopback endpoint that records each request's
// headers and body and answers 500.
type headerRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	header []http.Header
	bodies []string
}

func newHeaderRecorder(t *testing.T) *headerRecorder {
	h := &headerRecorder{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.header = append(h.header, r.Header.Clone())
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// auth_header and auth_scheme decide how the credential is sent;
// model_options.max_output_tokens caps a named model's output allowance on
// the wire.
func TestAuthHeaderSchemeAndOutputAllowanceReachTheWire(t *testing.T) {
	h := newHeaderRecorder(t)
	body := "[options.models.m]\nprovider = \"openai_compatible\"\nid = \"m-id\"\ncredential = \"local\"\nendpoint = \"" + h.srv.URL + "/v1/chat/completions\"\n" +
		"auth_header = \"X-Team-Api-Key\"\nauth_scheme = \"raw\"\nmodel_options = { max_output_tokens = 77 }\n" +
		"[options.routes.main]\nentries = [{ model = \"m\" }]\n[options]\nmodel_route = \"main\"\n"
	d := providerDeployment(t, body, nil)
	obj, _ := runProviderTask(t, d, HostOptions{LookupEnv: lookupKey})
	if obj.Outcome.Status != event.StatusFailed || len(h.header) != 1 {
		t.Fatalf("outcome %+v, %d requests", obj.Outcome, len(h.header))
	}
	if got := h.header[0].Get("X-Team-Api-Key"); got != providerTestKey || h.header[0].Get("Authorization") != "" {
		t.Fatalf("credential header %q, Authorization %q", got, h.header[0].Get("Authorization"))
	}
	var req struct {
		MaxTokens int64 `json:"max_tokens"`
	}
	json.Unmarshal([]byte(h.bodies[0]), &req)
	if req.MaxTokens != 77 {
		t.Fatalf("max_tokens %d, want 77: %s", req.MaxTokens, h.bodies[0])
	}
}

// The options.context keys reach the compaction engine as written, and a
// route's window is the smallest its entries declare
// (options.models.NAME.context_window_tokens); enabled = false turns the
// engine off.
func TestContextKeysReachTheCompactionEngine(t *testing.T) {
	mdl := func(name, window string) string {
		return "[options.models." + name + "]\nprovider = \"openai_compatible\"\nid = \"" + name + "\"\ncredential = \"local\"\nendpoint = \"http://127.0.0.1:1/v1\"\ncontext_window_tokens = " + window + "\n"
	}
	body := mdl("a", "9000") + mdl("b", "7000") + "[options.routes.main]\nentries = [{ model = \"a\" }, { model = \"b\" }]\n[options]\nmodel_route = \"main\"\n" +
		"[options.context]\nsafety_margin_percent = 20\nmax_summary_tokens = 300\nmax_summary_bytes = 4000\nkeep_recent_turns = 3\n"
	d := providerDeployment(t, body, nil)
	m, err := d.FixtureModel("http://127.0.0.1:1/v1")
	if err != nil {
		t.Fatal(err)
	}
	got := d.compactionOptions(m)
	want := CompactionOptions{SafetyMarginPercent: 20, MaxSummaryTokens: 300, MaxSummaryBytes: 4000, KeepRecentTurns: 3, ContextWindowTokens: 7000}
	if got == nil || *got != want {
		t.Fatalf("compaction options %+v, want %+v", got, want)
	}
	off := providerDeployment(t, "[options.context]\nenabled = false\n", nil)
	if off.compactionOptions(nil) != nil {
		t.Fatal("enabled = false leaves the engine on")
	}
}
