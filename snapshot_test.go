package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// snapDeployment writes a deployment of body (after schema_version and a
// script model answering "done") with a skills root "team" holding one
// Skill, review, whose SKILL.md is skill, and loads it.
func snapDeployment(t *testing.T, body, skill string) *Deployment {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	sk := filepath.Join(dir, "skills", "review")
	os.Mkdir(ws, 0o700)
	os.MkdirAll(sk, 0o700)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"text":["done"]}]}`), 0o600)
	os.WriteFile(filepath.Join(sk, "SKILL.md"), []byte(skill), 0o600)
	doc := "schema_version = 1\n" + graphScriptModel + body +
		"[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \".\" }\n[options.skills]\nactivate = [\"team/review\"]\n"
	p := filepath.Join(dir, "deployment.toml")
	os.WriteFile(p, []byte(doc), 0o600)
	d, err := Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws, "skills": filepath.Join(dir, "skills")}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const snapSkill = "---\nname: review\ndescription: Review things.\n---\nRead the evidence.\n"

// offeredModel answers "done" and keeps the tools each request offered.
type offeredModel struct {
	mu      sync.Mutex
	offered [][]model.ToolDef
}

func (m *offeredModel) Info() model.Info { return model.Info{Provider: "test", Model: "offered"} }

func (m *offeredModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	m.mu.Lock()
	m.offered = append(m.offered, slices.Clone(req.Tools))
	m.mu.Unlock()
	return &model.Response{Text: "done", FinishReason: model.FinishStop}, emit("done")
}

// snapTask is what one task left of its dispatch snapshot.
type snapTask struct {
	obj       *TaskObject
	started   []event.Event // every run.started, the root's first
	snapshots []ledger.SnapshotReport
	times     []time.Time // the ledger's event times
}

// runSnapTask runs one task of rt on store and reads its snapshots back.
func runSnapTask(t *testing.T, rt *Runtime, store *ledger.MemoryStore, input string) snapTask {
	t.Helper()
	task, err := rt.Start(context.Background(), input)
	if err != nil {
		t.Fatal(err)
	}
	var st snapTask
	for ev := range task.Events() {
		if ev.Type == event.RunStarted {
			st.started = append(st.started, ev)
		}
	}
	st.obj = task.Wait()
	rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
	if err != nil {
		t.Fatal(err)
	}
	st.snapshots = rep.Snapshots
	if rep.SnapshotDigest != st.obj.SnapshotDigest {
		t.Errorf("the ledger report's snapshot digest %q is not the task object's %q", rep.SnapshotDigest, st.obj.SnapshotDigest)
	}
	recs, _ := store.Records(context.Background(), task.ID())
	for _, r := range recs {
		if r.Kind == ledger.RecordEvent {
			st.times = append(st.times, r.Event.Time)
		}
	}
	return st
}

// rootSnapshot is the root's snapshot of one task, read back and checked.
func (st snapTask) rootSnapshot(t *testing.T) *ledger.Snapshot {
	t.Helper()
	if len(st.snapshots) == 0 {
		t.Fatalf("no snapshot record (outcome %+v)", st.obj.Outcome)
	}
	sn := st.snapshots[0]
	if sn.Snapshot == nil {
		t.Fatalf("the root's snapshot does not read back: %s", sn.Invalid)
	}
	return sn.Snapshot
}

func entry(s *ledger.Snapshot, id string) (ledger.SnapshotEntry, bool) {
	for _, e := range s.Admitted {
		if e.ID == id {
			return e, true
		}
	}
	return ledger.SnapshotEntry{}, false
}

func snapRuntime(t *testing.T, d *Deployment, host HostOptions) *Runtime {
	t.Helper()
	rt, err := d.NewRuntime(context.Background(), host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// snapBase is the deployment every input of the digest is varied from:
// shell.run in its sandbox, the workspace tools, the fault server's MCP
// tools over stdio, one activated Skill and the script model.
func snapBase(bin, serverArgs string) string {
	return "[options.shell]\nenabled = true\n" +
		"[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + bin + "\"\nargs = [\"-mode\", \"ok\"" + serverArgs + "]\n"
}

// TestDispatchSnapshotAtEveryTaskStart: every task start records its
// dispatch snapshot in the ledger, built from what the task actually
// materialized (the live MCP session's tools and protocol version, the
// sandbox, the activated Skill, the model), and carries its digest on
// run.started and the task object. Two tasks a minute apart by an
// injected clock, with different inputs and IDs, have equal snapshots:
// nothing in it is time- or health-dependent.
func TestDispatchSnapshotAtEveryTaskStart(t *testing.T) {
	bin := buildFaultServer(t)
	d := snapDeployment(t, snapBase(bin, ""), snapSkill)
	// The clock starts now: the task's deadline is on it, and the MCP
	// sessions' health is stamped with it.
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Second))
	store := ledger.NewMemoryStore()
	rt := snapRuntime(t, d, HostOptions{Store: store, Clock: clk})
	first := runSnapTask(t, rt, store, "first")
	clk.Move(time.Minute)
	second := runSnapTask(t, rt, store, "a different input")
	if !second.times[0].After(first.times[0].Add(59 * time.Second)) {
		t.Fatalf("the injected clock did not move: %v then %v", first.times[0], second.times[0])
	}
	for i, st := range []snapTask{first, second} {
		if st.obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("task %d: outcome %+v", i, st.obj.Outcome)
		}
		if len(st.snapshots) != 1 {
			t.Fatalf("task %d: %d snapshot records, want one", i, len(st.snapshots))
		}
		dig := string(st.snapshots[0].Digest)
		if st.obj.SnapshotDigest != dig || st.started[0].Deployment == nil || st.started[0].Deployment.SnapshotDigest != dig {
			t.Fatalf("task %d: the record's digest %s, the task object's %q, run.started's %+v", i, dig, st.obj.SnapshotDigest, st.started[0].Deployment)
		}
	}
	if first.obj.SnapshotDigest != second.obj.SnapshotDigest {
		t.Fatalf("two tasks a minute apart have different snapshots:\n%+v\n%+v", first.rootSnapshot(t), second.rootSnapshot(t))
	}
	s := first.rootSnapshot(t)
	if s.Fingerprint != d.Fingerprint {
		t.Errorf("fingerprint %q, want %s", s.Fingerprint, d.Fingerprint)
	}
	want := map[string]func(ledger.SnapshotEntry) bool{
		"tool:shell.run": func(e ledger.SnapshotEntry) bool {
			return e.Layer != "" && e.Rule != "" && strings.HasPrefix(e.Attributes["sandbox"], "required") && strings.HasPrefix(e.Attributes["digest"], "sha256:")
		},
		"tool:fs.read": func(e ledger.SnapshotEntry) bool { return e.Layer == "configuration" && e.Rule == "builtin.configured" },
		"tool:mcp/records/echo": func(e ledger.SnapshotEntry) bool {
			return e.Kind == "mcp_tool" && e.Attributes["server"] == "records" && strings.HasPrefix(e.Attributes["definition_digest"], "sha256:") && e.Attributes["sandbox"] != ""
		},
		"mcp:records": func(e ledger.SnapshotEntry) bool {
			return e.Kind == "mcp_server" && e.Attributes["protocol_version"] != "" && e.Attributes["transport"] == "stdio"
		},
		"skill:team/review": func(e ledger.SnapshotEntry) bool {
			return len(e.Attributes["instruction_sha256"]) == 64 && len(e.Attributes["metadata_sha256"]) == 64
		},
		"model": func(e ledger.SnapshotEntry) bool { return e.Attributes["provider"] == "script" },
	}
	for id, ok := range want {
		if e, found := entry(s, id); !found || !ok(e) {
			t.Errorf("entry %s: %+v (found %v)", id, e, found)
		}
	}
	b, _ := json.Marshal(s)
	for _, stamp := range []string{clk.Now().Format("2006-01-02"), strconv.FormatInt(clk.Now().Unix()/1000, 10), "ready", "checked_at"} {
		if strings.Contains(string(b), stamp) {
			t.Errorf("the snapshot holds %q, time or health: %s", stamp, b)
		}
	}
}

// TestDispatchSnapshotIsWhatTheModelIsOffered: records tell the truth.
// The tools the snapshot lists are exactly the tools the model's request
// offers, each with the digest of the definition it was shown.
func TestDispatchSnapshotIsWhatTheModelIsOffered(t *testing.T) {
	bin := buildFaultServer(t)
	d := snapDeployment(t, snapBase(bin, ""), snapSkill)
	store := ledger.NewMemoryStore()
	m := &offeredModel{}
	st := runSnapTask(t, snapRuntime(t, d, HostOptions{Store: store, Model: m}), store, "go")
	s := st.rootSnapshot(t)
	offered := map[string]string{}
	for _, def := range m.offered[0] {
		offered[def.Name] = engine.DefinitionDigest(def)
	}
	listed := map[string]string{}
	for _, e := range s.Admitted {
		if e.Kind == "tool" || e.Kind == "mcp_tool" {
			listed[e.Attributes["name"]] = e.Attributes["digest"]
		}
	}
	if len(offered) < 5 || !mapsEqual(offered, listed) {
		t.Fatalf("the model was offered %v, the snapshot lists %v", offered, listed)
	}
	if e, _ := entry(s, "model"); e.Attributes["provider"] != "test" || e.Attributes["model"] != "offered" {
		t.Fatalf("the snapshot's model is %+v, not the host's model the task ran on", e)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestDispatchSnapshotDigestChangesWithEachInput: an MCP pin, a Skill
// file, an authority rule, the sandbox profile and a tool's description
// each change the digest, and where the change is materialized the entry
// it concerns changes too (a pin and a rule live in the deployment, whose
// fingerprint the snapshot holds; a Skill file does not, and still
// changes it). The same deployment loaded again gives the same digest.
func TestDispatchSnapshotDigestChangesWithEachInput(t *testing.T) {
	bin := buildFaultServer(t)
	snap := func(body, skill string) *ledger.Snapshot {
		t.Helper()
		store := ledger.NewMemoryStore()
		return runSnapTask(t, snapRuntime(t, snapDeployment(t, body, skill), HostOptions{Store: store}), store, "go").rootSnapshot(t)
	}
	digest := func(s *ledger.Snapshot) ledger.ResultRef {
		_, d, err := ledger.EncodeSnapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := snapBase(bin, "")
	first := snap(base, snapSkill)
	if again := snap(base, snapSkill); digest(again) != digest(first) {
		t.Fatalf("the same deployment gave two digests:\n%+v\n%+v", first, again)
	}
	echo, _ := entry(first, "tool:mcp/records/echo")
	for name, c := range map[string]struct {
		body, skill string
		entry       string // the entry the change shows in, "" for the fingerprint only
	}{
		"mcp pin":          {base + "[options.mcp.servers.records.pins]\necho = \"" + echo.Attributes["definition_digest"] + "\"\n", snapSkill, ""},
		"skill file":       {base, strings.Replace(snapSkill, "Read the evidence.", "Read the evidence twice.", 1), "skill:team/review"},
		"authority rule":   {base + "[[options.mcp.policies]]\n[options.mcp.policies.tools]\ndefault = \"deny\"\nallow = [{ id = \"ops.echo\", value = \"mcp/records/echo\" }]\n", snapSkill, "tool:mcp/records/echo"},
		"sandbox profile":  {strings.Replace(base, "enabled = true\n", "enabled = true\n[options.shell.sandbox]\nnetwork = \"allow\"\n", 1), snapSkill, "tool:shell.run"},
		"tool description": {snapBase(bin, `, "-desc", "Echoes the message back."`), snapSkill, "tool:mcp/records/echo"},
	} {
		got := snap(c.body, c.skill)
		if digest(got) == digest(first) {
			t.Errorf("changing the %s left the digest unchanged", name)
			continue
		}
		if c.entry == "" {
			if got.Fingerprint == first.Fingerprint {
				t.Errorf("changing the %s changed neither the fingerprint nor an entry", name)
			}
			continue
		}
		was, _ := entry(first, c.entry)
		now, _ := entry(got, c.entry)
		if b1, b2 := mustJSON(t, was), mustJSON(t, now); b1 == b2 {
			t.Errorf("changing the %s left %s as it was: %s", name, c.entry, b1)
		}
		if name == "skill file" && got.Fingerprint != first.Fingerprint {
			t.Errorf("a Skill file is not in the deployment, yet the fingerprint changed")
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDispatchSnapshotCoversTheRouteEntries: the model route's entries are
// in the snapshot, so dropping one changes the digest.
func TestDispatchSnapshotCoversTheRouteEntries(t *testing.T) {
	models := "[options.models.first]\nprovider = \"vercel\"\nid = \"first-id\"\ncredential = \"gw\"\n" +
		"[options.models.second]\nprovider = \"openrouter\"\nid = \"second-id\"\ncredential = \"or\"\n" +
		"[options]\nmodel_route = \"main\"\n" +
		"[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n" +
		"[credentials.or]\nconsumer = \"provider.openrouter\"\nsources = [{ kind = \"environment\", name = \"OR\" }]\n"
	snap := func(entries string) *ledger.Snapshot {
		f := newChatFixture(t, false)
		d := providerDeployment(t, models+"[options.routes.main]\nentries = ["+entries+"]\n", nil)
		store := ledger.NewMemoryStore()
		return runSnapTask(t, snapRuntime(t, d, HostOptions{Store: store, FixtureEndpoint: f.srv.URL + "/v1/chat/completions"}), store, "go").rootSnapshot(t)
	}
	both := snap(`{ model = "first" }, { model = "second" }`)
	one := snap(`{ model = "first" }`)
	route, _ := entry(both, "route:main")
	second, ok := entry(both, "model:second")
	if route.Attributes["entries"] != "first,second" || !ok || second.Attributes["provider"] != "openrouter" || second.Attributes["model"] != "second-id" {
		t.Fatalf("the route's entries are not in the snapshot: %+v", both.Admitted)
	}
	if _, ok := entry(one, "model:second"); ok || mustJSON(t, one.Admitted) == mustJSON(t, both.Admitted) {
		t.Fatalf("dropping a route entry left the snapshot's entries as they were: %+v", one.Admitted)
	}
}

// describedCatalog offers one host tool with a description.
type describedCatalog struct {
	id, desc string
}

func (c *describedCatalog) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: authority.ID(c.id), Description: c.desc, InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}}
}

func (c *describedCatalog) Call(context.Context, authority.Call) ledger.ToolResult {
	return ledger.ToolResult{Status: outcome.ToolCompleted}
}

// TestDispatchSnapshotOfAHandBuiltRuntime: a runtime assembled by hand has
// a snapshot too (no fingerprint), recorded and on the task object; a
// tool's description changes its digest, the task's input does not.
func TestDispatchSnapshotOfAHandBuiltRuntime(t *testing.T) {
	set, err := authority.New(authority.Config{Host: []authority.ID{"host.lookup"}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(desc, input string) snapTask {
		store := ledger.NewMemoryStore()
		rt, err := NewRuntime(RuntimeOptions{Model: &offeredModel{}, Authority: set, Store: store, Catalogs: []ToolCatalog{&describedCatalog{id: "host.lookup", desc: desc}}})
		if err != nil {
			t.Fatal(err)
		}
		return runSnapTask(t, rt, store, input)
	}
	a := run("Looks a record up.", "one")
	b := run("Looks a record up.", "two")
	c := run("Looks a record up, then forgets it.", "one")
	s := a.rootSnapshot(t)
	if s.Fingerprint != "" || a.started[0].Deployment != nil || !strings.HasPrefix(a.obj.SnapshotDigest, "sha256:") {
		t.Fatalf("snapshot %+v, run.started deployment %+v, task object digest %q", s, a.started[0].Deployment, a.obj.SnapshotDigest)
	}
	if _, ok := entry(s, "tool:host.lookup"); !ok {
		t.Fatalf("the host tool is not in the snapshot: %+v", s.Admitted)
	}
	if a.obj.SnapshotDigest != b.obj.SnapshotDigest {
		t.Error("the task's input changed the snapshot digest")
	}
	if a.obj.SnapshotDigest == c.obj.SnapshotDigest {
		t.Error("a tool's description did not change the snapshot digest")
	}
}

// spawnModel is a root that spawns one child limited to tools, waits for
// it and answers; the child answers at once. It keeps the tools each
// agent was offered, by the agent's input.
type spawnModel struct {
	tools string // the child's capabilities.tools, JSON
	mu    sync.Mutex
	seen  map[string][]string
}

func (m *spawnModel) Info() model.Info { return model.Info{Provider: "test", Model: "spawn"} }

func (m *spawnModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	first := req.Messages[0].Content
	m.mu.Lock()
	if m.seen[first] == nil {
		for _, d := range req.Tools {
			m.seen[first] = append(m.seen[first], d.Name)
		}
		slices.Sort(m.seen[first])
	}
	m.mu.Unlock()
	if first != "root" {
		return &model.Response{Text: "child done", FinishReason: model.FinishStop}, emit("child done")
	}
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	switch len(results) {
	case 0:
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "s1", Name: "subagent",
			Arguments: json.RawMessage(`{"action":"spawn","request":{"input":"child","capabilities":{"tools":` + m.tools + `}}}`)}}}, nil
	case 1:
		var v struct {
			Subagent struct {
				Agent struct {
					AgentID string `json:"agent_id"`
				} `json:"agent"`
			} `json:"subagent"`
		}
		if err := json.Unmarshal([]byte(results[0]), &v); err != nil || v.Subagent.Agent.AgentID == "" {
			return nil, errors.New("no spawned agent in " + results[0])
		}
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "w1", Name: "subagent",
			Arguments: json.RawMessage(`{"action":"wait","agent_ids":["` + v.Subagent.Agent.AgentID + `"],"mode":"all","timeout_ms":60000}`)}}}, nil
	}
	return &model.Response{Text: "root done", FinishReason: model.FinishStop}, emit("root done")
}

// TestChildSpawnRecordsItsOwnSnapshot: a child's spawn records the child's
// own snapshot — its narrowed subset, never the subagent tool — against
// the child's agent in the root's ledger, and the child's run.started
// carries its digest. The tools the child's model is offered are exactly
// the snapshot's.
func TestChildSpawnRecordsItsOwnSnapshot(t *testing.T) {
	set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}, Host: []authority.ID{"host.one", "host.two"}})
	if err != nil {
		t.Fatal(err)
	}
	m := &spawnModel{tools: `["host.one"]`, seen: map[string][]string{}}
	store := ledger.NewMemoryStore()
	rt, err := NewRuntime(RuntimeOptions{Model: m, Authority: set, Store: store, Children: &children.Capacity{},
		Deployment: &event.DeploymentRef{SchemaVersion: 1, ContractRevision: "test", Fingerprint: "sha256:" + strings.Repeat("0", 64)},
		Catalogs:   []ToolCatalog{&describedCatalog{id: "host.one", desc: "One."}, &describedCatalog{id: "host.two", desc: "Two."}}})
	if err != nil {
		t.Fatal(err)
	}
	st := runSnapTask(t, rt, store, "root")
	if st.obj.Outcome.Status != event.StatusCompleted || len(st.snapshots) != 2 || len(st.started) != 2 {
		t.Fatalf("outcome %+v, %d snapshots, %d run.started", st.obj.Outcome, len(st.snapshots), len(st.started))
	}
	tools := func(s *ledger.Snapshot) []string {
		var out []string
		for _, e := range s.Admitted {
			if e.Kind == "tool" {
				out = append(out, e.Attributes["name"])
			}
		}
		slices.Sort(out)
		return out
	}
	root, child := st.snapshots[0], st.snapshots[1]
	if root.Snapshot == nil || child.Snapshot == nil {
		t.Fatalf("snapshots do not read back: %q, %q", root.Invalid, child.Invalid)
	}
	if got := strings.Join(tools(root.Snapshot), " "); got != "host_one host_two subagent" || got != strings.Join(m.seen["root"], " ") {
		t.Errorf("the root's snapshot lists %q, its model was offered %v", got, m.seen["root"])
	}
	if got := strings.Join(tools(child.Snapshot), " "); got != "host_one" || got != strings.Join(m.seen["child"], " ") {
		t.Errorf("the child's snapshot lists %q, its model was offered %v", got, m.seen["child"])
	}
	if e, _ := entry(child.Snapshot, "tool:host.one"); e.Layer != "child:"+child.AgentID && e.Layer == "" {
		t.Errorf("the child's tool has no deciding layer: %+v", e)
	}
	for _, ev := range st.started {
		want := root
		if ev.Agent.AgentID == child.AgentID {
			want = child
		} else if ev.Agent.AgentID != root.AgentID {
			t.Fatalf("run.started of agent %s, which has no snapshot", ev.Agent.AgentID)
		}
		if ev.Deployment == nil || ev.Deployment.SnapshotDigest != string(want.Digest) {
			t.Errorf("agent %s's run.started carries %+v, want digest %s", ev.Agent.AgentID, ev.Deployment, want.Digest)
		}
	}
	if root.Digest == child.Digest || st.obj.SnapshotDigest != string(root.Digest) {
		t.Errorf("root %s, child %s, task object %s", root.Digest, child.Digest, st.obj.SnapshotDigest)
	}
}
