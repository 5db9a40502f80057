package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/graphfill"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
)

// remoteApprovalDeployment loads a deployment of three remotes on the real
// A2A fixture peer: a and b, whose [[authority]] a2a_remotes entries carry
// approval = "required", and c, whose entry does not.
func remoteApprovalDeployment(t *testing.T) *Deployment {
	t.Helper()
	base := a2aFixturePeer(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	card, ep := base+"/.well-known/agent-card.json", base+"/rpc"
	body := "schema_version = 1\n[options.children]\nenabled = true\n"
	for _, n := range []string{"a", "b", "c"} {
		body += "[options.a2a.remotes." + n + "]\ncard_url = \"" + card + "\"\nendpoint = \"" + ep + "\"\n"
	}
	body += "[[authority]]\nid = \"ops\"\n[authority.a2a_remotes]\n" +
		"a = { card_url = \"" + card + "\", endpoint = \"" + ep + "\", approval = \"required\" }\n" +
		"b = { card_url = \"" + card + "\", endpoint = \"" + ep + "\", approval = \"required\" }\n" +
		"c = { card_url = \"" + card + "\", endpoint = \"" + ep + "\" }\n"
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(cfg, []byte(body), 0o600)
	d, err := Load(LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": ws}, LoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// spawnRemote is a spawn_remote call of id to remote.
func spawnRemote(id, remote string) []model.ToolCall {
	args, _ := json.Marshal(map[string]any{"action": "spawn_remote", "remote_request": map[string]any{"remote": remote,
		"parts": []any{map[string]string{"text": "echo:hello"}}, "accepted_output_modes": []string{"text/plain"}}})
	return []model.ToolCall{{ID: id, Name: "subagent", Arguments: args}}
}

// TestRemoteApprovalAsksForThatRemoteOnly: a spawn_remote to a remote whose
// [[authority]] a2a_remotes entry requires approval asks, naming the
// remote as its resource, the effect delegate and the entry's rule; one to
// a remote whose entry does not runs without asking; an "allow for this
// task" answer for remote a covers a later spawn_remote to a and never one
// to b.
func TestRemoteApprovalAsksForThatRemoteOnly(t *testing.T) {
	t.Parallel()
	d := remoteApprovalDeployment(t)
	m := &claimModel{turns: [][]model.ToolCall{spawnRemote("call_1_1", "a"), spawnRemote("call_2_1", "b"), spawnRemote("call_3_1", "a"), spawnRemote("call_4_1", "c")}}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var mu sync.Mutex
	var asked []approval.Request
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "delegate", Approver: answerFunc(func(_ context.Context, req approval.Request) (approval.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req)
		if req.CallID == "call_1_1" {
			return approval.AllowForTask, nil
		}
		return approval.AllowOnce, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for ev := range task.Events() {
		if ev.Type == event.ToolFinished {
			results[ev.CallID] = string(ev.Result)
		}
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj.Outcome)
		t.Fatalf("outcome %s", b)
	}
	var calls []string
	for _, req := range asked {
		calls = append(calls, req.CallID)
	}
	if strings.Join(calls, ",") != "call_1_1,call_2_1" {
		t.Fatalf("asked about %v, want call_1_1 (remote a) and call_2_1 (remote b: a's grant never covers it); call_3_1 is covered by a's grant, call_4_1's remote c asks nothing", calls)
	}
	for i, remote := range []string{"a", "b"} {
		req := asked[i]
		want := []authority.Resource{{Kind: authority.ResourceRemote, Value: remote}}
		by := authority.ApprovalSourceOf(req.Decision)
		if dl := req.Delegation; dl == nil || dl.Action != "spawn_remote" || dl.Remote != remote || !strings.HasPrefix(dl.InputDigest, "sha256:") || dl.InputBytes == 0 {
			t.Errorf("request %s delegation %+v, want the remote %s and the parts' digest", req.CallID, dl, remote)
		}
		if req.Effect != authority.EffectDelegate || len(req.Resources) != 1 || req.Resources[0] != want[0] || by.Layer != "ops" || by.RuleID != "a2a_remotes."+remote {
			t.Errorf("request %s: effect %s resources %v required by %+v", req.CallID, req.Effect, req.Resources, by)
		}
	}
	for _, id := range []string{"call_1_1", "call_2_1", "call_3_1", "call_4_1"} {
		if !strings.Contains(results[id], `"action":"spawn_remote"`) {
			t.Errorf("%s: %s", id, results[id])
		}
	}
}

// TestRemoteApprovalWithNoChannelNamesTheRemotesRule: with no approver, a
// spawn_remote to a remote whose entry requires approval is denied under
// that entry's rule, so the outcome says what to change.
func TestRemoteApprovalWithNoChannelNamesTheRemotesRule(t *testing.T) {
	t.Parallel()
	d := remoteApprovalDeployment(t)
	m := &claimModel{turns: [][]model.ToolCall{spawnRemote("s1", "b")}}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	for range task.Events() {
	}
	obj := task.Wait()
	b, _ := json.Marshal(obj.Outcome)
	if obj.Outcome.Status != event.StatusPolicyDenied || !strings.Contains(string(b), `"rule":{"configured":{"id":"a2a_remotes.b"}}`) {
		t.Fatalf("outcome %s, want policy_denied under a2a_remotes.b", b)
	}
}

// TestRemoteApprovalInThePolicyAndTheGraph: Deployment.Decide (what `pablo
// policy check` prints) says a spawn_remote to a needs approval by the
// ops layer's rule a2a_remotes.a and one to c needs none; the graph shows
// remote:a and remote:b approval_gated and remote:c ready.
func TestRemoteApprovalInThePolicyAndTheGraph(t *testing.T) {
	t.Parallel()
	d := remoteApprovalDeployment(t)
	for remote, rule := range map[string]string{"a": "a2a_remotes.a", "c": ""} {
		dec, err := d.Decide(context.Background(), authority.Subagent, graphfill.SpawnRemoteProbe(remote))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if dec.NeedsApproval {
			got = authority.ApprovalSourceOf(dec).RuleID
		}
		if !dec.Allowed || got != rule {
			t.Errorf("spawn_remote to %s: %+v, want approval by %q", remote, dec, rule)
		}
	}
	g, err := d.Graph(context.Background(), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		want := map[string]graph.Readiness{"remote:a": graph.ApprovalGated, "remote:b": graph.ApprovalGated, "remote:c": graph.Ready}[n.ID]
		if want != "" && n.State != want {
			t.Errorf("%s is %s, want %s: %+v", n.ID, n.State, want, n.Reasons)
		}
	}
}
