package pablo_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/model"
)

// memoryTask runs one task of f's deployment and returns its events.
func memoryTask(t *testing.T, f *memoryFixture, approver pablo.Approver) ([]event.Event, *pablo.TaskObject) {
	t.Helper()
	ctx := context.Background()
	d, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(f.dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": filepath.Join(f.dir, "work"), "memory": filepath.Join(f.dir, "memory")},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(ctx, pablo.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.StartTask(ctx, pablo.TaskRequest{Input: "go", Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	for ev := range task.Events() {
		evs = append(evs, ev)
	}
	return evs, task.Wait()
}

func toolResults(evs []event.Event, name string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev.Type == event.ToolFinished && ev.Name == name {
			var r map[string]any
			json.Unmarshal(ev.Result, &r)
			out = append(out, r)
		}
	}
	return out
}

func runStarted(evs []event.Event) *event.DeploymentRef {
	for _, ev := range evs {
		if ev.Type == event.RunStarted {
			return ev.Deployment
		}
	}
	return nil
}

const diffThenRead = `{"turns": [
  {"tool_calls": [{"name": "memory_snapshot_diff", "arguments": {"against": "current"}}]},
  {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "ledger"}}]},
  {"text": ["done"]}]}`

func TestMemoryReadBeyondThePinIsDeniedWithoutApproval(t *testing.T) {
	f := newMemoryFixture(diffThenRead, "")
	defer os.RemoveAll(f.dir)
	evs, _ := memoryTask(t, f, nil)
	res := toolResults(evs, "memory.snapshot.diff")
	if len(res) != 1 {
		t.Fatalf("diff results = %v", res)
	}
	b, _ := json.Marshal(res[0])
	if res[0]["status"] == "completed" || !strings.Contains(string(b), "memory.beyond_pin") {
		t.Fatalf("a diff against current without an approver = %s; want it refused naming rule memory.beyond_pin", b)
	}
}

func TestMemoryReadBeyondThePinWithApprovalIsRecorded(t *testing.T) {
	f := newMemoryFixture(diffThenRead, "")
	defer os.RemoveAll(f.dir)
	moved := false
	evs, obj := memoryTask(t, f, approveMemory(func() {
		if !moved {
			// The ref moves mid-task, after the pin was taken.
			f.commit(map[string]string{"records/service/ledger.md": strings.Replace(memoryRecords["records/service/ledger.md"], "owner: payments", "owner: finance", 1)})
			moved = true
		}
	}))
	if obj.Outcome.Status != "completed" {
		t.Fatalf("outcome = %+v", obj.Outcome)
	}
	var asked, answered bool
	for _, ev := range evs {
		if ev.Approval != nil && ev.Type == event.ApprovalRequested && ev.Approval.Capability == "memory.snapshot.diff" && ev.Approval.RuleID == "memory.beyond_pin" {
			asked = true
		}
		if ev.Approval != nil && ev.Type == event.ApprovalAnswered {
			answered = true
		}
	}
	if !asked || !answered {
		t.Errorf("the approval was not recorded as approval events (asked %v, answered %v)", asked, answered)
	}
	diff := memoryOf(toolResults(evs, "memory.snapshot.diff")[0])
	if diff["total"] != float64(1) {
		t.Errorf("diff after approval = %v, want the one changed record", diff)
	}
	rec := memoryOf(toolResults(evs, "memory.record.read")[0])["record"].(map[string]any)
	if rec["owner"] != "payments" {
		t.Errorf("a read after the ref moved returned owner %v; the pin says payments", rec["owner"])
	}
}

// TestMemorySearchReadAndGrepStayOnThePinAfterTheRefMoves: a newer commit
// lands on the ref mid-task (while the task waits on the diff's
// approval); every later search, read and grep of the task answers from
// the pinned commit, and names it.
func TestMemorySearchReadAndGrepStayOnThePinAfterTheRefMoves(t *testing.T) {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_snapshot_diff", "arguments": {"against": "current"}}]},
  {"tool_calls": [{"name": "memory_graph_search", "arguments": {"text": "invoices"}}]},
  {"tool_calls": [{"name": "memory_graph_search", "arguments": {"owner": "payments"}}]},
  {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "ledger"}}]},
  {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "invoices"}}]},
  {"tool_calls": [{"name": "memory_docs_grep", "arguments": {"pattern": "Page the"}}]},
  {"text": ["done"]}]}`, "")
	defer os.RemoveAll(f.dir)
	head, _ := f.repo.Head()
	pin := head.Hash().String()
	var next string
	evs, obj := memoryTask(t, f, approveMemory(func() {
		if next == "" {
			next = f.commit(map[string]string{
				"records/service/ledger.md":   strings.Replace(memoryRecords["records/service/ledger.md"], "owner: payments", "owner: finance", 1),
				"records/service/invoices.md": "---\nid: invoices\nkind: service\nowner: payments\nrepo: acme/invoices\n---\nInvoices.\n",
				"handbook/oncall.md":          "# On call\nPage the finance team for billing.\n",
			})
		}
	}))
	if obj.Outcome.Status != "completed" || next == "" || next == pin {
		t.Fatalf("outcome %+v; the ref moved to %q from %s", obj.Outcome, next, pin)
	}
	if d := memoryOf(toolResults(evs, "memory.snapshot.diff")[0]); d["total"] != float64(3) || d["to"] != next {
		t.Fatalf("the diff = %v, want the 3 changes up to %s", d, next)
	}
	searches := toolResults(evs, "memory.graph.search")
	if s := memoryOf(searches[0]); s["total"] != float64(0) || s["commit"] != pin {
		t.Errorf("a search for a record of the newer commit = %v, want none at the pin %s", s, pin)
	}
	if s := memoryOf(searches[1]); s["total"] != float64(2) || s["commit"] != pin {
		t.Errorf("a search by the pinned owner = %v, want billing and ledger at the pin", s)
	}
	reads := toolResults(evs, "memory.record.read")
	if r := memoryOf(reads[0]); r["commit"] != pin || r["record"].(map[string]any)["owner"] != "payments" {
		t.Errorf("read ledger = %v, want owner payments at the pin", r)
	}
	if b, _ := json.Marshal(reads[1]); reads[1]["status"] == "completed" || !strings.Contains(string(b), "not_found") {
		t.Errorf("read of a record only the newer commit holds = %s, want not_found", b)
	}
	g := memoryOf(toolResults(evs, "memory.docs.grep")[0])
	ms, _ := g["matches"].([]any)
	if len(ms) != 1 || ms[0].(map[string]any)["text"] != "Page the payments team for billing." || ms[0].(map[string]any)["revision"] != pin {
		t.Errorf("grep = %v, want the pinned line at revision %s", g, pin)
	}
}

func TestMemoryRefreshGrantReadsBeyondThePinWithoutApproval(t *testing.T) {
	f := newMemoryFixture(diffThenRead, "")
	defer os.RemoveAll(f.dir)
	dep := filepath.Join(f.dir, "deployment.toml")
	b, _ := os.ReadFile(dep)
	os.WriteFile(dep, []byte(strings.Replace(string(b), "[options.memory.grants.diff]\n", "[options.memory.grants.diff]\nrefresh = true\n", 1)), 0o600)
	evs, _ := memoryTask(t, f, nil)
	if r := toolResults(evs, "memory.snapshot.diff"); len(r) != 1 || r[0]["status"] != "completed" {
		t.Fatalf("a diff under a refresh grant = %v, want completed without an approver", r)
	}
}

func TestMemoryPinIsInTheSnapshotDigestAndRunStarted(t *testing.T) {
	f := newMemoryFixture(`{"turns": [{"text": ["nothing"]}]}`, "")
	defer os.RemoveAll(f.dir)
	head, _ := f.repo.Head()
	evs, _ := memoryTask(t, f, nil)
	first := runStarted(evs)
	if first == nil || first.Memory == nil || first.Memory.Commit != head.Hash().String() || first.Memory.Ref != "refs/heads/master" {
		t.Fatalf("run.started deployment = %+v, want the memory pin %s", first, head.Hash())
	}
	next := f.commit(map[string]string{"handbook/new.md": "new\n"})
	evs, _ = memoryTask(t, f, nil)
	second := runStarted(evs)
	if second.Memory.Commit != next {
		t.Errorf("a task after a new commit pinned %s, want %s", second.Memory.Commit, next)
	}
	if second.SnapshotDigest == first.SnapshotDigest {
		t.Errorf("the dispatch snapshot digest did not change with the pin")
	}
}

func TestMemoryGrantHidesRecordsOfOtherKinds(t *testing.T) {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "vault"}}]},
  {"tool_calls": [{"name": "memory_graph_search", "arguments": {"text": "signing keys"}}]},
  {"tool_calls": [{"name": "memory_docs_grep", "arguments": {"pattern": "signing keys"}}]},
  {"text": ["done"]}]}`, "")
	defer os.RemoveAll(f.dir)
	evs, _ := memoryTask(t, f, nil)
	read := toolResults(evs, "memory.record.read")[0]
	b, _ := json.Marshal(read)
	if !strings.Contains(string(b), `"not_found"`) || strings.Contains(string(b), "secret") {
		t.Errorf("reading a record of a kind outside the grant = %s; want not_found that names nothing", b)
	}
	search := memoryOf(toolResults(evs, "memory.graph.search")[0])
	if search["total"] != float64(0) {
		t.Errorf("searching a hidden record's text = %v; want nothing counted", search)
	}
	// docs_paths bound grep: a record file is not a doc.
	grep := memoryOf(toolResults(evs, "memory.docs.grep")[0])
	if m, _ := grep["matches"].([]any); len(m) != 0 {
		t.Errorf("grep outside docs_paths = %v", grep)
	}
}

func TestMemoryRuntimeIsNotReadyWithoutItsRefOrOntology(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"missing ref", `ref = "refs/heads/master"`, `ref = "refs/heads/nope"`, "options.memory.ref"},
		{"ontology does not load", "", "", "options.memory.ontology"},
		{"repository is not a git repository", "", "no-git", "options.memory.repository"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newMemoryFixture(`{"turns": [{"text": ["x"]}]}`, "")
			defer os.RemoveAll(f.dir)
			dep := filepath.Join(f.dir, "deployment.toml")
			b, _ := os.ReadFile(dep)
			switch {
			case c.to == "no-git":
				os.RemoveAll(filepath.Join(f.dir, "memory", ".git"))
			case c.from != "":
				os.WriteFile(dep, []byte(strings.Replace(string(b), c.from, c.to, 1)), 0o600)
			default:
				os.WriteFile(filepath.Join(f.dir, "memory", "ontology.toml"), []byte("[kinds.a]\nbogus = 1\n"), 0o644)
			}
			d, err := pablo.Load(pablo.LoadOptions{Config: dep, Bindings: map[string]string{"workspace": filepath.Join(f.dir, "work"), "memory": filepath.Join(f.dir, "memory")}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.NewRuntime(context.Background(), pablo.HostOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewRuntime = %v, want an error naming %s", err, c.want)
			}
		})
	}
}

func TestMemoryNodeInTheGraphAndWhy(t *testing.T) {
	f := newMemoryFixture(`{"turns": [{"text": ["x"]}]}`, "")
	defer os.RemoveAll(f.dir)
	head, _ := f.repo.Head()
	load := func() *pablo.Deployment {
		d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(f.dir, "deployment.toml"), Bindings: map[string]string{"workspace": filepath.Join(f.dir, "work"), "memory": filepath.Join(f.dir, "memory")}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ctx := context.Background()
	g, err := load().Graph(ctx, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := g.Node("memory")
	if !ok || n.State != graph.Ready || n.Attributes["commit"] != head.Hash().String() || n.Attributes["ref"] != "refs/heads/master" {
		t.Fatalf("memory node = %+v, want ready at %s", n, head.Hash())
	}
	if s, _ := g.Node("tool:memory.graph.search"); s.State != graph.Ready || s.Attributes["kinds"] != "service" {
		t.Errorf("search tool node = %+v, want ready with its grant's kinds", s)
	}
	if s, _ := g.Node("tool:memory.snapshot.diff"); s.State != graph.ApprovalGated {
		t.Errorf("diff tool node = %+v, want approval-gated (memory.beyond_pin)", s)
	}
	why, err := load().Why(ctx, "memory.record.read", graph.Options{})
	if err != nil || !why.Admitted || why.Node != "tool:memory.record.read" {
		t.Errorf("why memory.record.read = %+v, %v", why, err)
	}

	// A ref that does not resolve makes the node, and every tool that
	// requires it, unusable.
	dep := filepath.Join(f.dir, "deployment.toml")
	b, _ := os.ReadFile(dep)
	os.WriteFile(dep, []byte(strings.Replace(string(b), `ref = "refs/heads/master"`, `ref = "refs/heads/gone"`, 1)), 0o600)
	g, err = load().Graph(ctx, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Node("memory"); n.State != graph.Unsupported || !strings.Contains(n.Reasons[0].Detail, "options.memory.ref") {
		t.Errorf("memory node with a missing ref = %+v, want unsupported naming options.memory.ref", n)
	}
	if s, _ := g.Node("tool:memory.graph.search"); s.State.Usable() {
		t.Errorf("a memory tool stays usable without its repository's ref: %+v", s)
	}
}

func TestMemoryChildSharesItsRootsPin(t *testing.T) {
	f := newMemoryFixture(`{
  "turns": [
    {"tool_calls": [{"name": "memory_snapshot_diff", "arguments": {"against": "current"}}]},
    {"tool_calls": [{"id": "reader", "name": "subagent", "arguments": {"action": "spawn", "request": {
      "input": "Who owns the ledger?", "capabilities": {"tools": ["memory.record.read"]}}}}]},
    {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "agent_ids": ["{{agent_id:reader}}"], "mode": "all", "timeout_ms": 60000}}]},
    {"text": ["done"]}
  ],
  "agents": [
    {"input": "Who owns the ledger?", "turns": [
      {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "ledger"}}]},
      {"text": ["payments"]}]}
  ]}`, "\n[options.children]\nenabled = true\n")
	defer os.RemoveAll(f.dir)
	head, _ := f.repo.Head()
	moved := false
	evs, obj := memoryTask(t, f, approveMemory(func() {
		if !moved {
			f.commit(map[string]string{"records/service/ledger.md": strings.Replace(memoryRecords["records/service/ledger.md"], "owner: payments", "owner: finance", 1)})
			moved = true
		}
	}))
	if obj.Outcome.Status != "completed" {
		t.Fatalf("outcome = %+v", obj.Outcome)
	}
	starts := 0
	for _, ev := range evs {
		if ev.Type != event.RunStarted {
			continue
		}
		starts++
		if ev.Deployment == nil || ev.Deployment.Memory == nil || ev.Deployment.Memory.Commit != head.Hash().String() {
			t.Errorf("run.started = %+v, want the root's pin %s", ev.Deployment, head.Hash())
		}
	}
	if starts != 2 {
		t.Fatalf("%d run.started events, want the root's and the child's", starts)
	}
	reads := toolResults(evs, "memory.record.read")
	if len(reads) != 1 {
		t.Fatalf("child reads = %v", reads)
	}
	if rec := memoryOf(reads[0])["record"].(map[string]any); rec["owner"] != "payments" {
		t.Errorf("the child read owner %v after the ref moved; the root's pin says payments", rec["owner"])
	}
}

func TestMemorySkillRequiringAMemoryToolFollowsItsGrant(t *testing.T) {
	for _, c := range []struct {
		name  string
		grant bool
		ready bool
	}{{"granted", true, true}, {"not granted", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			f := newMemoryFixture(`{"turns": [{"text": ["x"]}]}`, "\n[options.skills]\nroots = { team = { base = \"binding\", name = \"skills\", path = \".\" } }\n")
			defer os.RemoveAll(f.dir)
			dep := filepath.Join(f.dir, "deployment.toml")
			if !c.grant {
				b, _ := os.ReadFile(dep)
				os.WriteFile(dep, []byte(strings.Replace(string(b), "[options.memory.grants.query]\nkinds = [\"service\"]\npaths = [\"*\"]\n", "", 1)), 0o600)
			}
			skills := filepath.Join(f.dir, "skills", "lookup")
			os.MkdirAll(skills, 0o755)
			os.WriteFile(filepath.Join(skills, "SKILL.md"), []byte("---\nname: lookup\ndescription: Looks services up in memory.\nallowed-tools: memory.graph.search\n---\nSearch the memory.\n"), 0o600)
			d, err := pablo.Load(pablo.LoadOptions{Config: dep, Bindings: map[string]string{"workspace": filepath.Join(f.dir, "work"), "memory": filepath.Join(f.dir, "memory"), "skills": filepath.Join(f.dir, "skills")}})
			if err != nil {
				t.Fatal(err)
			}
			g, err := d.Graph(context.Background(), graph.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, ok := g.Node("skill:team/lookup")
			if !ok || (n.State == graph.Ready) != c.ready {
				t.Fatalf("skill node = %+v, want ready %v", n, c.ready)
			}
		})
	}
}

func TestMemoryValidateTakesAProposedPatchFromTheWorkspace(t *testing.T) {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_update_propose", "arguments": {"subject": "add invoices", "changes": [
    {"op": "add", "record": {"id": "invoices", "kind": "service", "owner": "payments", "edges": [{"kind": "depends_on", "to": "nowhere"}]}}]}}]},
  {"text": ["Proposed."]}]}`, "")
	defer os.RemoveAll(f.dir)
	evs, _ := memoryTask(t, f, nil)
	proposed := memoryOf(toolResults(evs, "memory.update.propose")[0])
	path, _ := proposed["path"].(string)
	if path == "" {
		t.Fatalf("propose result = %v", proposed)
	}
	// A second task validates the patch the first one wrote.
	os.WriteFile(filepath.Join(f.dir, "turns.json"), []byte(`{"turns": [
  {"tool_calls": [{"name": "memory_ontology_validate", "arguments": {"patch": "`+path+`"}}]},
  {"tool_calls": [{"name": "memory_ontology_validate", "arguments": {"patch": "../deployment.toml"}}]},
  {"text": ["Checked."]}]}`), 0o600)
	evs, _ = memoryTask(t, f, nil)
	res := toolResults(evs, "memory.ontology.validate")
	if len(res) != 2 {
		t.Fatalf("validate results = %v", res)
	}
	v := memoryOf(res[0])
	var codes []string
	for _, x := range v["violations"].([]any) {
		codes = append(codes, x.(map[string]any)["code"].(string))
	}
	if v["valid"] != false || strings.Join(codes, ",") != "missing_field,dangling_edge" {
		t.Errorf("validating the proposed patch = %v, want missing_field (repo) and dangling_edge", v)
	}
	// A patch path outside the workspace is not read.
	b, _ := json.Marshal(res[1])
	if res[1]["status"] == "completed" || strings.Contains(string(b), "schema_version") {
		t.Errorf("validating a path outside the workspace = %s, want it refused", b)
	}
}

// TestMemoryChildNarrowsItsMemoryScopeNeverWidens defends the rule that a
// spawn narrows the memory tools' kinds and paths like any capability: a
// child given one record's path reads that record and no other, and a
// spawn asking for a kind its parent lacks is refused, naming the field.
func TestMemoryChildNarrowsItsMemoryScopeNeverWidens(t *testing.T) {
	f := newMemoryFixture(`{
  "turns": [
    {"tool_calls": [{"id": "wide", "name": "subagent", "arguments": {"action": "spawn", "request": {
      "input": "Read the vault.", "capabilities": {"memory": {"kinds": ["secret"]}}}}}]},
    {"tool_calls": [{"id": "reader", "name": "subagent", "arguments": {"action": "spawn", "request": {
      "input": "Read two records.", "capabilities": {"tools": ["memory.record.read"], "memory": {"paths": ["records/service/billing.md"]}}}}}]},
    {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "agent_ids": ["{{agent_id:reader}}"], "mode": "all", "timeout_ms": 60000}}]},
    {"text": ["done"]}
  ],
  "agents": [
    {"input": "Read two records.", "turns": [
      {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "billing"}}]},
      {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "ledger"}}]},
      {"text": ["read"]}]}
  ]}`, "\n[options.children]\nenabled = true\n[options.approvals]\nsubagent = \"required\"\n")
	defer os.RemoveAll(f.dir)
	evs, obj := memoryTask(t, f, approverFunc(func(context.Context, approval.Request) (approval.Answer, error) { return approval.AllowOnce, nil }))
	if obj.Outcome.Status != "completed" {
		t.Fatalf("outcome = %+v", obj.Outcome)
	}
	// The approval of the spawn shows the memory scope it delegates.
	var scopes []string
	for _, ev := range evs {
		if ev.Type == event.ApprovalRequested && ev.Approval.Delegation != nil {
			b, _ := json.Marshal(ev.Approval.Delegation.Capabilities.Memory)
			scopes = append(scopes, string(b))
		}
	}
	if want := `{"kinds":["service"],"paths":["records/service/billing.md"]}`; !slices.Contains(scopes, want) {
		t.Errorf("approval.requested memory scopes = %v, want the narrowing spawn's: %s", scopes, want)
	}
	spawns := toolResults(evs, "subagent")
	if len(spawns) < 1 {
		t.Fatalf("no subagent results")
	}
	wide, _ := json.Marshal(spawns[0])
	if spawns[0]["status"] == "completed" || !strings.Contains(string(wide), "capability_not_inherited") || !strings.Contains(string(wide), "capabilities.memory.kinds") {
		t.Errorf("a spawn widening the memory kinds = %s; want it refused, capability_not_inherited at capabilities.memory.kinds", wide)
	}
	reads := toolResults(evs, "memory.record.read")
	if len(reads) != 2 {
		t.Fatalf("child reads = %v", reads)
	}
	if rec, _ := memoryOf(reads[0])["record"].(map[string]any); rec == nil || rec["id"] != "billing" {
		t.Errorf("the child could not read billing, inside its memory scope: %v", reads[0])
	}
	denied, _ := json.Marshal(reads[1])
	if memoryOf(reads[1])["record"] != nil || !strings.Contains(string(denied), "not_found") {
		t.Errorf("the child read ledger, outside its memory scope: %s", denied)
	}
}

// TestMemoryProposalIsNoOracleThroughTheRuntime defends, end to end, the
// rule that proposing and validating tell a hidden record from no record
// in nothing the model or the ledger sees: a task proposing a service
// with the ID of a secret its grants hide gets the same tool results
// (status, payload, violations, patch digest and path, once the pinned
// commit's ID is set aside) as a task on a repository without the secret.
func TestMemoryProposalIsNoOracleThroughTheRuntime(t *testing.T) {
	turns := `{"turns": [
  {"tool_calls": [{"name": "memory_update_propose", "arguments": {"subject": "add vault", "changes": [
    {"op": "add", "record": {"id": "vault", "kind": "service", "owner": "o", "repo": "r"}}]}}]},
  {"tool_calls": [{"name": "memory_ontology_validate", "arguments": {"changes": [
    {"op": "add", "record": {"id": "vault", "kind": "service", "owner": "o", "repo": "r"}}]}}]},
  {"text": ["done"]}]}`
	seen := func(hidden bool) string {
		f := newMemoryFixture(turns, "")
		defer os.RemoveAll(f.dir)
		if !hidden {
			// The same repository without the secret, and without
			// billing's edge to it, which the grants hide too.
			wt, _ := f.repo.Worktree()
			if _, err := wt.Remove("records/secret/vault.md"); err != nil {
				t.Fatal(err)
			}
			f.commit(map[string]string{"records/service/billing.md": strings.Replace(memoryRecords["records/service/billing.md"], "[ledger, vault]", "[ledger]", 1)})
		}
		head, _ := f.repo.Head()
		evs, obj := memoryTask(t, f, nil)
		if obj.Outcome.Status != "completed" {
			t.Fatalf("outcome = %+v", obj.Outcome)
		}
		var out []string
		for _, name := range []string{"memory.update.propose", "memory.ontology.validate"} {
			for _, r := range toolResults(evs, name) {
				b, _ := json.Marshal(r)
				s := string(b)
				if rev, ok := memoryOf(r)["revision"].(string); ok {
					s = strings.ReplaceAll(strings.ReplaceAll(s, rev, "<sha256>"), rev[:16], "<sha256-16>")
				}
				out = append(out, name+" "+strings.ReplaceAll(s, head.Hash().String(), "<pin>"))
			}
		}
		if len(out) != 2 {
			t.Fatalf("memory results = %v", out)
		}
		return strings.Join(out, "\n")
	}
	absent, present := seen(false), seen(true)
	if absent != present {
		t.Errorf("the tool results tell a hidden record from none.\nwithout it:\n%s\nwith it:\n%s", absent, present)
	}
}

// proposeHandoffModel: the root spawns a proposer child whose validated
// answer names the patch memory.update.propose wrote as an artifact, then
// hands that artifact to a reader child, which reads it with fs.read.
type proposeHandoffModel struct {
	mu    sync.Mutex
	asked map[string]int
	read  string // what the reader's fs.read returned
}

const (
	proposeRoot   = "Propose, then review."
	proposeWriter = "Propose the invoices service."
	proposeReader = "Review the proposed patch."
)

func (m *proposeHandoffModel) Info() model.Info {
	return model.Info{Provider: "test", Model: "propose"}
}

func (m *proposeHandoffModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	first := req.Messages[0].Content
	m.mu.Lock()
	m.asked[first]++
	m.mu.Unlock()
	call := func(name, args string) *model.Response {
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "c", Name: name, Arguments: json.RawMessage(args)}}}
	}
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	last := ""
	if len(results) > 0 {
		last = results[len(results)-1]
	}
	answer := func(text string) (*model.Response, error) {
		return &model.Response{Text: text, FinishReason: model.FinishStop}, emit(text)
	}
	switch first {
	case proposeWriter:
		if len(results) == 0 {
			return call("memory_update_propose", `{"subject":"add invoices","changes":[{"op":"add","record":{"id":"invoices","kind":"service","owner":"payments","repo":"acme/invoices"}}]}`), nil
		}
		var v struct {
			Memory struct{ Path, Revision string } `json:"memory"`
		}
		json.Unmarshal([]byte(last), &v)
		return answer(`{"artifact":{"path":"` + v.Memory.Path + `","revision":"` + v.Memory.Revision + `"}}`)
	case proposeReader:
		if len(results) == 0 {
			return call("fs_read", `{"path":"`+handedPath(req)+`"}`), nil
		}
		m.mu.Lock()
		m.read = last
		m.mu.Unlock()
		return answer("reviewed")
	}
	var v struct {
		Subagent struct {
			Agent struct {
				AgentID string `json:"agent_id"`
			} `json:"agent"`
			Settled []struct {
				AgentID  string `json:"agent_id"`
				ResultID string `json:"result_id"`
			} `json:"settled"`
		} `json:"subagent"`
	}
	json.Unmarshal([]byte(last), &v)
	switch len(results) {
	case 0:
		return call("subagent", `{"action":"spawn","request":{"input":"`+proposeWriter+`","capabilities":{"tools":["memory.update.propose"]},
			"output_schema":{"type":"object","properties":{"artifact":{"type":"object","properties":{"path":{"type":"string"},"revision":{"type":"string"}},"required":["path","revision"],"additionalProperties":false}},"required":["artifact"],"additionalProperties":false}}}`), nil
	case 1, 3:
		return call("subagent", `{"action":"wait","agent_ids":["`+v.Subagent.Agent.AgentID+`"],"mode":"all","timeout_ms":60000}`), nil
	case 2:
		if len(v.Subagent.Settled) == 0 {
			return answer("the proposer did not settle: " + last)
		}
		s := v.Subagent.Settled[0]
		return call("subagent", `{"action":"spawn","request":{"input":"`+proposeReader+`","capabilities":{"tools":["fs.read"]},
			"handoffs":[{"source_agent_id":"`+s.AgentID+`","result_id":"`+s.ResultID+`","kind":"artifact"}]}}`), nil
	}
	return answer(last)
}

// handedPath is the artifact path a handoff message names.
func handedPath(req *model.Request) string {
	for _, msg := range req.Messages {
		if i := strings.Index(msg.Content, "memory-proposals/"); i >= 0 {
			rest := msg.Content[i:]
			if j := strings.IndexAny(rest, " \n\",}"); j > 0 {
				return rest[:j]
			}
			return rest
		}
	}
	return "missing"
}

// TestMemoryProposedPatchIsHandedOffAsAnArtifact defends the rule that a
// patch from memory.update.propose is a workspace file like any other: a
// proposer child names it (path and revision) in its validated answer,
// and a reader child handed it as an artifact starts after the revision
// is re-checked and reads the patch.
func TestMemoryProposedPatchIsHandedOffAsAnArtifact(t *testing.T) {
	f := newMemoryFixture(`{"turns": [{"text": ["unused"]}]}`, "\n[options.children]\nenabled = true\n")
	defer os.RemoveAll(f.dir)
	d, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(f.dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": filepath.Join(f.dir, "work"), "memory": filepath.Join(f.dir, "memory")},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &proposeHandoffModel{asked: map[string]int{}}
	rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	obj, err := rt.Run(context.Background(), proposeRoot)
	if err != nil || obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("%+v %v", obj.Outcome, err)
	}
	if m.asked[proposeReader] == 0 || !strings.Contains(m.read, "Subject: [PATCH] add invoices") || !strings.Contains(m.read, "records/service/invoices.md") {
		t.Errorf("the reader (asked %d) read %q; want the proposed patch. Root's answer: %s", m.asked[proposeReader], m.read, *obj.Outcome.Output)
	}
}
