package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/providertest"
)

// The acceptance tests of issue 30, through `pablo run`: a deployment whose
// model is a local OpenAI-compatible server (the fault-injecting corpus
// server on the loopback interface, named without any test flag), one
// test per row of the table. Each ends completed, or failed with a
// reason that names the cause.

// realRun is one `pablo run` against a deployment of body.
type realRun struct {
	code           int
	stdout, stderr string
	obj            struct {
		Outcome struct {
			Status   string  `json:"status"`
			Output   *string `json:"output"`
			Code     string  `json:"code"`
			Delivery string  `json:"delivery"`
			Reason   string  `json:"reason"`
		} `json:"outcome"`
		Accounting struct {
			ModelCalls json.Number `json:"model_calls"`
		} `json:"accounting"`
	}
}

// localModel is a deployment whose model is the server at endpoint.
func localModel(endpoint, extra string) string {
	return "schema_version = 1\n[options.shell]\nenabled = false\n[options.model]\nprovider = \"openai_compatible\"\nid = \"llama3.1\"\nendpoint = \"" + endpoint + "\"\n" + extra
}

// runReal runs `pablo run [--json] <args> "Was INV-1042 paid?"` on the
// deployment body, with the task clock c (nil: the system clock).
func runReal(t *testing.T, body string, c *clock.Manual, jsonOut bool, args ...string) realRun {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("INV-1042 paid on 2024-03-01\n"), 0o600)
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(cfg, []byte(body), 0o600)
	all := append([]string{"run", "--config", cfg, "--bind", "workspace=" + ws}, args...)
	if jsonOut {
		all = append(all, "--json")
	}
	all = append(all, "Was INV-1042 paid?")
	var out, errb bytes.Buffer
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir}
	if c != nil {
		h.clock = c
	}
	r := realRun{}
	r.code = run(context.Background(), all, h)
	r.stdout, r.stderr = out.String(), errb.String()
	if jsonOut {
		if err := json.Unmarshal(out.Bytes(), &r.obj); err != nil {
			t.Fatalf("not a task object (%v): %s %s", err, r.stdout, r.stderr)
		}
	}
	return r
}

func (r realRun) completed(t *testing.T) {
	t.Helper()
	if r.code != 0 || r.obj.Outcome.Status != "completed" || r.obj.Outcome.Output == nil || *r.obj.Outcome.Output != "Paid on time." {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
}

func (r realRun) failed(t *testing.T, code, delivery string, words ...string) {
	t.Helper()
	o := r.obj.Outcome
	if o.Status != "failed" || o.Code != code || o.Delivery != delivery {
		t.Fatalf("want failed %s (%s), exit %d: %s", code, delivery, r.code, r.stdout)
	}
	for _, w := range words {
		if !strings.Contains(o.Reason, w) {
			t.Fatalf("the reason does not say %q: %q", w, o.Reason)
		}
	}
	if len(o.Reason) > 2048 {
		t.Fatalf("the reason is %d bytes", len(o.Reason))
	}
}

// A 429 with Retry-After: 1 is retried after one second of the task's
// clock; the task completes, and the failed attempt is a model call of its
// own. Without --json the wait shows on the status line.
func TestRealModel429RetryAfterIsRetried(t *testing.T) {
	t.Parallel()
	for _, jsonOut := range []bool{true, false} {
		srv := providertest.New(providertest.Options{Quirk: providertest.RateLimited, Faults: 1})
		defer srv.Close()
		c := clock.NewManual(time.Now())
		go func() {
			c.WaitPending(time.Second, 1)
			c.Advance(time.Second)
		}()
		r := runReal(t, localModel(srv.Endpoint(), ""), c, jsonOut)
		if srv.Requests() != 2 {
			t.Fatalf("%d requests, want the 429 and its retry", srv.Requests())
		}
		if jsonOut {
			r.completed(t)
			if r.obj.Accounting.ModelCalls.String() != "2" {
				t.Fatalf("model calls %s, want 2", r.obj.Accounting.ModelCalls)
			}
		} else if r.code != 0 || !strings.Contains(r.stderr, "openai_compatible/llama3.1 failed; waiting 1s to retry") {
			t.Fatalf("exit %d, the status line does not show the wait: %s", r.code, r.stderr)
		}
	}
}

// An overloaded error event before any output is retried and completes;
// an error event after text reached the task fails with the provider's
// words, never retried.
func TestRealModelErrorEventMidStream(t *testing.T) {
	t.Parallel()
	over := providertest.New(providertest.Options{Quirk: providertest.OverloadedEvent, Faults: 1})
	defer over.Close()
	runReal(t, localModel(over.Endpoint(), "[options.model.retry]\ninitial_backoff_ms = 0\nmax_backoff_ms = 0\n"), nil, true).completed(t)
	mid := providertest.New(providertest.Options{Quirk: providertest.ErrorEventMidStream})
	defer mid.Close()
	r := runReal(t, localModel(mid.Endpoint(), ""), nil, true)
	r.failed(t, "provider_rejected", "response_received", "openai_compatible/llama3.1", providertest.MessageMidStream)
	if mid.Requests() != 1 {
		t.Fatalf("%d requests: an error after output was retried", mid.Requests())
	}
}

// A 400 names the status and the provider's message in the task object,
// on stderr's summary and in the ledger's terminal record.
func TestRealModel400SaysWhatTheProviderSaid(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.ModelNotFound})
	defer srv.Close()
	r := runReal(t, localModel(srv.Endpoint(), ""), nil, true)
	r.failed(t, "provider_rejected", "response_received", "HTTP 400", providertest.MessageModelNotFound)
	store := filepath.Join(t.TempDir(), "ledger.db")
	r = runReal(t, localModel(srv.Endpoint(), ""), nil, false, "--store", store)
	if !strings.Contains(r.stderr, "why: ") || !strings.Contains(r.stderr, providertest.MessageModelNotFound) {
		t.Fatalf("the stderr summary does not say why: %s", r.stderr)
	}
	code, out, _ := cli(t, "ledger", "recover", "--store", store, "--json")
	if code != 0 || !strings.Contains(out, `"reason"`) || !strings.Contains(out, "llama9") {
		t.Fatalf("the ledger's terminal record has no reason (exit %d): %s", code, out)
	}
}

// A refused connection says so and names the endpoint.
func TestRealModelConnectionRefusedNamesTheEndpoint(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{})
	endpoint := srv.Endpoint()
	srv.Close()
	r := runReal(t, localModel(endpoint, "[options.model.retry]\nmax_attempts = 0\n"), nil, true)
	r.failed(t, "provider_transport", "not_sent", "connection refused to "+endpoint)
}

// A complete stream (finish_reason stop) without data: [DONE] completes.
func TestRealModelStreamWithoutDoneCompletes(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.NoDone})
	defer srv.Close()
	runReal(t, localModel(srv.Endpoint(), ""), nil, true).completed(t)
}

// A local server on http://localhost works without --loopback-http in an
// unlocked deployment.
func TestRealModelLocalhostNeedsNoFlag(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{})
	defer srv.Close()
	endpoint := strings.Replace(srv.Endpoint(), "127.0.0.1", "localhost", 1)
	runReal(t, localModel(endpoint, ""), nil, true).completed(t)
	if srv.Requests() != 1 {
		t.Fatalf("%d requests", srv.Requests())
	}
}

// mistakes is a conversation in which the model's first call is mistaken
// and its second is right.
func mistakes(wrong providertest.Call) []providertest.Turn {
	return []providertest.Turn{
		{Calls: []providertest.Call{wrong}},
		{Calls: []providertest.Call{{Name: "fs_read", Args: `{"path":"a.txt"}`}}},
		{Text: "Paid on time."},
	}
}

// A call with a wrong argument name goes back to the model, which
// corrects itself; with max_recoverable_errors = 0 the task ends as the
// reference's does, and the reason names the tool and the argument.
func TestRealModelWrongArgumentRecovers(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Turns: mistakes(providertest.Call{Name: "fs_read", Args: `{"file":"a.txt"}`})})
	defer srv.Close()
	runReal(t, localModel(srv.Endpoint(), ""), nil, true).completed(t)
	if !strings.Contains(string(srv.Bodies()[1]), `\"status\":\"invalid_arguments\"`) || !strings.Contains(string(srv.Bodies()[1]), `\"pointer\":\"/file\"`) {
		t.Fatalf("the model was not told: %s", srv.Bodies()[1])
	}
	again := providertest.New(providertest.Options{Turns: mistakes(providertest.Call{Name: "fs_read", Args: `{"path":7}`})})
	defer again.Close()
	r := runReal(t, localModel(again.Endpoint(), "[options.tools]\nmax_recoverable_errors = 0\n"), nil, true)
	r.failed(t, "invalid_tool_arguments", "not_sent", "fs.read", "/path", "wrong_type")
}

// A call to a tool the model was not offered goes back to it; with
// max_recoverable_errors = 0 it ends policy_denied tool_unavailable.
func TestRealModelToolNotOfferedRecovers(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Turns: mistakes(providertest.Call{Name: "shell_run", Args: `{"command":"cat a.txt","cwd":"."}`})})
	defer srv.Close()
	runReal(t, localModel(srv.Endpoint(), ""), nil, true).completed(t)
	off := providertest.New(providertest.Options{Turns: mistakes(providertest.Call{Name: "shell_run", Args: `{"command":"cat a.txt","cwd":"."}`})})
	defer off.Close()
	r := runReal(t, localModel(off.Endpoint(), "[options.tools]\nmax_recoverable_errors = 0\n"), nil, true)
	if r.obj.Outcome.Status != "policy_denied" || !strings.Contains(r.stdout, `"rule":"tool_unavailable"`) {
		t.Fatalf("exit %d: %s", r.code, r.stdout)
	}
}

// A path outside the workspace is a denial: it ends the task by default,
// and under on_denial = "report" the model is told and the task
// completes; the ledger records the denied call, not dispatched.
func TestRealModelDenialEndsOrIsReported(t *testing.T) {
	t.Parallel()
	outside := providertest.Call{Name: "fs_read", Args: `{"path":"../secret.txt"}`}
	srv := providertest.New(providertest.Options{Turns: mistakes(outside)})
	defer srv.Close()
	if r := runReal(t, localModel(srv.Endpoint(), ""), nil, true); r.obj.Outcome.Status != "policy_denied" {
		t.Fatalf("a denial by default: exit %d %s", r.code, r.stdout)
	}
	rep := providertest.New(providertest.Options{Turns: mistakes(outside)})
	defer rep.Close()
	store := filepath.Join(t.TempDir(), "ledger.db")
	runReal(t, localModel(rep.Endpoint(), "[options.tools]\non_denial = \"report\"\n"), nil, true, "--store", store).completed(t)
	if !strings.Contains(string(rep.Bodies()[1]), `\"status\":\"policy_denied\"`) {
		t.Fatalf("the model was not told of the denial: %s", rep.Bodies()[1])
	}
	_, out, _ := cli(t, "ledger", "recover", "--store", store, "--json")
	if !strings.Contains(out, `"policy_denied"`) || !strings.Contains(out, `"not_sent"`) {
		t.Fatalf("the ledger does not show the denied call: %s", out)
	}
}

// TestReadmeRealModelDeploymentsLoad: the README's local-server and hosted
// deployments are valid as written, the local one with no test flag.
func TestReadmeRealModelDeploymentsLoad(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"# deploy/local-model.toml", "# deploy/hosted-model.toml", "# deploy/anthropic.toml", "# deploy/openai.toml", "# deploy/gemini.toml", "# deploy/remote-reviewer.toml"} {
		i := strings.Index(string(readme), "```toml\n"+name+"\n")
		if i < 0 {
			t.Fatalf("the README has no block %s", name)
		}
		block := string(readme[i+len("```toml\n"):])
		block = block[:strings.Index(block, "```")]
		cfg := filepath.Join(t.TempDir(), "deployment.toml")
		os.WriteFile(cfg, []byte(block), 0o600)
		code, out, errs := cli(t, "config", "validate", "--config", cfg, "--bind", "workspace="+t.TempDir())
		if code != 0 || !strings.HasPrefix(out, "valid sha256:") {
			t.Fatalf("%s: exit %d: %s %s", name, code, out, errs)
		}
	}
}
