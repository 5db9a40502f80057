package main

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
)

// doctorJSON runs `pablo doctor --json` and decodes its report.
func doctorJSON(t *testing.T, env map[string]string, args ...string) (int, doctorReport, string) {
	t.Helper()
	code, out, errs := runWithEnv(t, env, append([]string{"doctor", "--json"}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d: not a report: %q %s", code, out, errs)
	}
	if rep.SchemaVersion != 1 || rep.ExitCode != code {
		t.Fatalf("report %+v, exit %d", rep, code)
	}
	return code, rep, out + errs
}

func failedCheck(rep doctorReport) doctorCheck {
	for _, c := range rep.Checks {
		if c.Status == "failed" {
			return c
		}
	}
	return doctorCheck{}
}

// namedCheck is the finding called name.
func namedCheck(rep doctorReport, name string) doctorCheck {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	return doctorCheck{}
}

func writeConfig(t *testing.T, body string) (cfg, ws string) {
	t.Helper()
	dir := t.TempDir()
	ws = filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg = filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n"+body), 0o600)
	return cfg, ws
}

const chatModel = `[options.model]
provider = "openai_compatible"
id = "probe-model"
endpoint = "https://llm.internal.test/v1/chat/completions"
credential = "local"
[credentials.local]
consumer = "provider.openai_compatible"
sources = [{ kind = "environment", name = "LOCAL_KEY" }]
`

func TestDoctorOfflineExitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		body  string
		env   map[string]string
		bind  bool
		extra []string
		exit  int
		check string
	}{
		{"HealthyDeploymentIsZero", chatModel, map[string]string{"LOCAL_KEY": "never-printed-key"}, true, nil, 0, ""},
		{"InvalidConfigIsTwo", "[options.model]\nprovider = \"nope\"\n", nil, true, nil, 2, "config"},
		{"UnknownFlagIsTwo", chatModel, nil, true, []string{"--frobnicate"}, 2, "config"},
		{"UnknownProbeIsTwo", chatModel, nil, true, []string{"--probe", "everything"}, 2, "config"},
		{"MissingWorkspaceBindingIsTwo", chatModel, map[string]string{"LOCAL_KEY": "k-123456"}, false, nil, 2, "workspace"},
		{"MissingCredentialIsThree", chatModel, nil, true, nil, 3, "credentials"},
		{"FixtureNeedsNoModelCredential", chatModel, nil, true, []string{"--fixture-endpoint", "http://127.0.0.1:9/v1/chat/completions"}, 0, ""},
		{"MissingOAuthClientSecretIsThree", chatModel + `[credentials.reports_oauth]
consumer = "mcp.oauth"
sources = [{ kind = "environment", name = "REPORTS_CLIENT_SECRET" }]
[options.mcp.servers.reports]
transport = "http"
url = "https://reports.example.test/mcp"
required = true
oauth = { grant = "client_credentials", client_id = "pablo-reports", client_secret = "reports_oauth" }
`, map[string]string{"LOCAL_KEY": "k-123456"}, true, nil, 3, "credentials"},
		{"RequiredServerDeniedIsSeven", chatModel + `[options.mcp.servers.records]
transport = "stdio"
command = "/bin/cat"
[[options.mcp.policies]]
servers = { default = "deny" }
`, map[string]string{"LOCAL_KEY": "k-123456"}, true, nil, 7, "policy"},
		{"RequiredServerWithNoAdmissibleToolIsSeven", chatModel + `[options.mcp.servers.records]
transport = "stdio"
command = "/bin/cat"
[options.policy.tools]
default = "allow"
allow = [{ id = "only.fs", value = "fs.read" }]
`, map[string]string{"LOCAL_KEY": "k-123456"}, true, nil, 7, "policy"},
		{"OptionalServerDeniedIsFine", chatModel + `[options.mcp.servers.records]
transport = "stdio"
command = "/bin/cat"
required = false
[[options.mcp.policies]]
servers = { default = "deny" }
`, map[string]string{"LOCAL_KEY": "k-123456"}, true, nil, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, ws := writeConfig(t, c.body)
			args := []string{"--config", cfg}
			if c.bind {
				args = append(args, "--bind", "workspace="+ws)
			}
			code, rep, all := doctorJSON(t, c.env, append(args, c.extra...)...)
			if code != c.exit || failedCheck(rep).Name != c.check {
				t.Fatalf("exit %d (want %d), first failure %+v\n%s", code, c.exit, failedCheck(rep), all)
			}
			if c.exit != 2 && (rep.Fingerprint == nil || !strings.HasPrefix(*rep.Fingerprint, "sha256:")) {
				t.Fatalf("fingerprint %v", rep.Fingerprint)
			}
			if strings.Contains(all, "never-printed-key") {
				t.Fatal("a credential value was printed")
			}
		})
	}
}

func TestDoctorTextReport(t *testing.T) {
	t.Parallel()
	cfg, ws := writeConfig(t, chatModel)
	code, out, errs := runWithEnv(t, nil, "doctor", "--config", cfg, "--bind", "workspace="+ws)
	if code != 3 || !strings.Contains(out, "FAIL credentials") || !strings.Contains(out, "exit 3") || !strings.Contains(errs, "credentials check failed") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
}

// fixture is a loopback Chat Completions endpoint that answers with a
// configured status and content type and records what it received.
type fixture struct {
	srv         *httptest.Server
	mu          sync.Mutex
	status      int
	contentType string
	body        map[string]any
	auth        string
	hits        int
}

func newFixture(t *testing.T, status int, contentType string) *fixture {
	f := &fixture{status: status, contentType: contentType}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.hits++
		json.Unmarshal(raw, &f.body)
		f.auth = r.Header.Get("Authorization")
		f.mu.Unlock()
		if f.status >= 300 && f.status < 400 {
			http.Redirect(w, r, "http://127.0.0.1:9/elsewhere", f.status)
			return
		}
		w.Header().Set("Content-Type", f.contentType)
		w.WriteHeader(f.status)
		if f.status == 200 {
			io.WriteString(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"OK\"},\"finish_reason\":null}]}\n\n")
			io.WriteString(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func TestDoctorProbeProviderExitCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		status      int
		contentType string
		exit        int
		code        string
	}{
		{"EventStreamIsZero", 200, "text/event-stream", 0, ""},
		{"UnauthorizedIsFour", 401, "application/json", 4, "provider_auth_rejected"},
		{"ForbiddenIsFour", 403, "application/json", 4, "provider_auth_rejected"},
		{"BadRequestIsFive", 400, "application/json", 5, "provider_request_unsupported"},
		{"UnknownModelIsFive", 404, "application/json", 5, "provider_request_unsupported"},
		{"UnprocessableIsFive", 422, "application/json", 5, "provider_request_unsupported"},
		{"RateLimitedIsEight", 429, "application/json", 8, "provider_rejected"},
		{"UnavailableIsEight", 503, "application/json", 8, "provider_rejected"},
		{"RedirectIsEight", 302, "", 8, "provider_rejected"},
		{"NotAnEventStreamIsEight", 200, "application/json", 8, "provider_response"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, c.status, c.contentType)
			cfg, ws := writeConfig(t, chatModel)
			code, rep, all := doctorJSON(t, nil, "--config", cfg, "--bind", "workspace="+ws, "--probe", "provider", "--fixture-endpoint", f.srv.URL+"/v1/chat/completions")
			fc := failedCheck(rep)
			if code != c.exit || fc.Code != c.code || (c.exit != 0 && fc.Name != "probe.provider") {
				t.Fatalf("exit %d (want %d), %+v\n%s", code, c.exit, fc, all)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.hits != 1 {
				t.Fatalf("%d requests, want exactly one", f.hits)
			}
			if _, tools := f.body["tools"]; tools || f.body["stream"] != true {
				t.Fatalf("request %v", f.body)
			}
		})
	}
}

// TestDoctorProbeUsesTheConfiguredCredential probes the configured
// endpoint itself (loopback http as an unlocked host fixture): the
// credential goes in its header, the allowance is 16 tokens, and the
// value is never printed.
func TestDoctorProbeUsesTheConfiguredCredential(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200, "text/event-stream")
	body := strings.Replace(chatModel, "https://llm.internal.test", f.srv.URL, 1)
	cfg, ws := writeConfig(t, body)
	code, rep, all := doctorJSON(t, map[string]string{"LOCAL_KEY": "configured-key-789"}, "--config", cfg, "--bind", "workspace="+ws, "--loopback-http", "--probe", "provider")
	if code != 0 {
		t.Fatalf("exit %d: %+v\n%s", code, rep, all)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.auth != "Bearer configured-key-789" {
		t.Fatalf("auth header %q", f.auth)
	}
	limit, _ := f.body["max_tokens"].(float64)
	if limit == 0 {
		limit, _ = f.body["max_completion_tokens"].(float64)
	}
	if limit != 16 || f.body["model"] != "probe-model" {
		t.Fatalf("request %v", f.body)
	}
	if strings.Contains(all, "configured-key-789") {
		t.Fatal("the credential was printed")
	}
}

func TestDoctorProbeProviderUnreachableIsEight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200, "text/event-stream")
	url := f.srv.URL + "/v1/chat/completions"
	f.srv.Close() // nothing listens there any more
	cfg, ws := writeConfig(t, chatModel)
	code, rep, all := doctorJSON(t, nil, "--config", cfg, "--bind", "workspace="+ws, "--probe", "provider", "--fixture-endpoint", url)
	if code != 8 || failedCheck(rep).Code != "provider_transport" {
		t.Fatalf("exit %d: %+v\n%s", code, rep, all)
	}
}

func TestDoctorProbeProviderInterruptedIs130(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	cfg, ws := writeConfig(t, chatModel)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb strings.Builder
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: t.TempDir()}
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"doctor", "--config", cfg, "--bind", "workspace=" + ws, "--probe", "provider", "--fixture-endpoint", hang.URL + "/v1/chat/completions"}, h)
	}()
	<-arrived // the request is in flight
	cancel()
	if code := <-done; code != 130 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

func TestDoctorProbeFixtureIsRefusedUnderLock(t *testing.T) {
	t.Parallel()
	cfg, ws := writeConfig(t, chatModel)
	code, rep, all := doctorJSON(t, nil, "--config", cfg, "--bind", "workspace="+ws, "--locked", "--probe", "provider", "--fixture-endpoint", "http://127.0.0.1:9/v1/chat/completions")
	if code != 2 || failedCheck(rep).Name != "probe.provider" {
		t.Fatalf("exit %d: %+v\n%s", code, rep, all)
	}
}

func TestDoctorProbeMCP(t *testing.T) {
	dir := t.TempDir()
	bin := builtFault(t, dir)
	for _, c := range []struct {
		name, mode string
		exit       int
	}{
		{"StartsAndClosesIsZero", "ok", 0},
		{"ExitAtStartupIsSix", "exit", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, ws := writeConfig(t, chatModel+`[options.mcp.servers.records]
transport = "stdio"
command = "`+bin+`"
args = ["-mode", "`+c.mode+`"]
startup_timeout_ms = 30000
`)
			code, rep, all := doctorJSON(t, map[string]string{"LOCAL_KEY": "k-123456"}, "--config", cfg, "--bind", "workspace="+ws, "--probe", "mcp")
			if code != c.exit {
				t.Fatalf("exit %d: %+v\n%s", code, rep, all)
			}
			last := namedCheck(rep, "probe.mcp")
			if last.Name != "probe.mcp" || (c.exit == 0 && !strings.Contains(last.Detail, "no tool called")) || (c.exit == 6 && last.Code != "mcp_failed") {
				t.Fatalf("check %+v", last)
			}
		})
	}
}

func TestDoctorProbeSkippedAfterAFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200, "text/event-stream")
	body := strings.Replace(chatModel, "https://llm.internal.test", f.srv.URL, 1)
	cfg, ws := writeConfig(t, body)
	code, rep, _ := doctorJSON(t, nil, "--config", cfg, "--bind", "workspace="+ws, "--loopback-http", "--probe", "provider")
	last := namedCheck(rep, "probe.provider")
	if code != 3 || last.Status != "skipped" || f.hits != 0 {
		t.Fatalf("exit %d, last %+v, %d requests", code, last, f.hits)
	}
}

// TestDoctorNotesALocalModelServer: a model on plain http to this host's
// loopback interface needs no --loopback-http; doctor says the endpoint is
// a local server whose traffic never leaves the host, and probes it.
func TestDoctorNotesALocalModelServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200, "text/event-stream")
	endpoint := f.srv.URL + "/v1/chat/completions"
	cfg, ws := writeConfig(t, "[options.model]\nprovider = \"openai_compatible\"\nid = \"llama3.1\"\nendpoint = \""+endpoint+"\"\n")
	code, rep, all := doctorJSON(t, nil, "--config", cfg, "--bind", "workspace="+ws, "--probe", "provider")
	if code != 0 {
		t.Fatalf("exit %d: %+v\n%s", code, rep, all)
	}
	c := namedCheck(rep, "model.local")
	if c.Status != "ok" || !strings.Contains(c.Detail, endpoint) || !strings.Contains(c.Detail, "never leaves the host") {
		t.Fatalf("no note of the local server: %+v", rep.Checks)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.body["model"] != "llama3.1" {
		t.Fatalf("the probe did not reach the local server: %v", f.body)
	}
}

// TestDoctorListsEveryMissingCredential: two credentials missing are two
// failed checks, each naming the variable it looked for and how to set it,
// not only the first one met.
func TestDoctorListsEveryMissingCredential(t *testing.T) {
	t.Parallel()
	cfg, ws := writeConfig(t, chatModel+`[credentials.reports_oauth]
consumer = "mcp.oauth"
sources = [{ kind = "environment", name = "REPORTS_CLIENT_SECRET" }]
[options.mcp.servers.reports]
transport = "http"
url = "https://reports.example.test/mcp"
required = true
oauth = { grant = "client_credentials", client_id = "pablo-reports", client_secret = "reports_oauth" }
`)
	code, out, errs := runWithEnv(t, nil, "doctor", "--config", cfg, "--bind", "workspace="+ws)
	if code != 3 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
	for _, w := range []string{"export LOCAL_KEY=<value>", "export REPORTS_CLIENT_SECRET=<value>"} {
		if !strings.Contains(out, w) {
			t.Fatalf("doctor does not say %q:\n%s", w, out)
		}
	}
}

// TestConfigValidateSaysWhichDefaultModelItChose: a deployment without
// [options.model] is still valid, but config validate says the default it
// chose and the credential that default needs; a written model says
// nothing of the kind.
func TestConfigValidateSaysWhichDefaultModelItChose(t *testing.T) {
	t.Parallel()
	cfg, ws := writeConfig(t, "")
	code, out, errs := runWithEnv(t, nil, "config", "validate", "--config", cfg, "--bind", "workspace="+ws)
	want := `model: no [options.model] provider is written; the default is provider "vercel"`
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, `it needs credential "gateway" (provider.vercel)`) {
		t.Fatalf("exit %d, stdout lacks %q and the credential:\n%s\n%s", code, want, out, errs)
	}
	cfg, ws = writeConfig(t, chatModel)
	if _, out, _ := runWithEnv(t, nil, "config", "validate", "--config", cfg, "--bind", "workspace="+ws); strings.Contains(out, "default is provider") {
		t.Fatalf("a written model is reported as a default:\n%s", out)
	}
}

// TestDoctorWarnsOfAPolicyRuleNamingNoCapability: a tools rule naming
// fs.reed validates, yet matches no call; doctor warns with the nearest
// name and keeps its exit code.
func TestDoctorWarnsOfAPolicyRuleNamingNoCapability(t *testing.T) {
	t.Parallel()
	cfg, ws := writeConfig(t, chatModel+`[options.policy.tools]
default = "allow"
deny = [{ id = "no.read", value = "fs.reed" }, { id = "no.write", value = "fs.write" }]
`)
	code, out, errs := runWithEnv(t, map[string]string{"LOCAL_KEY": "k-123456"}, "doctor", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 || !strings.Contains(out, `rule "no.read" names "fs.reed", no capability of this deployment; did you mean "fs.read"?`) || strings.Contains(out, `"no.write"`) {
		t.Fatalf("exit %d, want 0 and a warning with did you mean:\n%s\n%s", code, out, errs)
	}
}
