package pablo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// The wrapped-seam differential test. DESIGN.md promises that a host can
// wrap every seam it supplies (Authority, Ledger and its Store, Model,
// ToolCatalog, Approver, the remote runner) and that the runtime uses each
// only through its interface and the named optional capabilities
// (authority.Static, Router, HealthReporter, SandboxReporter, io.Closer,
// ledger.IndexedStore, ledger.VolatileStore, ApprovalChannel).
// Each scenario below runs twice on the same deployment: once as built,
// once with every seam wrapped in a pass-through struct that forwards
// exactly the interface and the named capabilities of what it wraps, as a
// careful host's wrapper does. The two runs must produce the same events
// and the same ledger records.
//
// The workspace, shell and Skill catalogs a deployment builds are not
// wrapped: no host can supply or obtain them (they have no exported
// constructor), so the runtime may know them by type.

// passAuthority is a host's one-line wrapper of an authority.
type passAuthority struct{ authority.Authority }

// staticAuthority forwards authority.Static as well.
type staticAuthority struct{ authority.Static }

func wrapAuthority(a authority.Authority) authority.Authority {
	if st, ok := a.(authority.Static); ok {
		return staticAuthority{st}
	}
	return passAuthority{a}
}

// passLedger is a host's one-line wrapper of a task's ledger.
type passLedger struct{ ledger.Ledger }

// passModel and passRouter are a host's wrappers of a model; a route's
// wrapper embeds the Router it wraps.
type (
	passModel  struct{ model.Model }
	passRouter struct{ Router }
)

func wrapModel(m model.Model) model.Model {
	if r, ok := m.(Router); ok {
		return passRouter{r}
	}
	return passModel{m}
}

// Catalog wrappers forward the capabilities what they wrap has.
type (
	passCatalog        struct{ ToolCatalog }
	passClosingCatalog struct {
		ToolCatalog
		io.Closer
	}
	passReportingCatalog struct {
		ToolCatalog
		HealthReporter
		SandboxReporter
		io.Closer
	}
)

func wrapCatalog(c ToolCatalog) ToolCatalog {
	switch c.(type) {
	case *engine.WorkspaceCatalog, *engine.ShellCatalog, *engine.SkillCatalog:
		return c // the runtime's own, see above
	}
	h, reports := c.(HealthReporter)
	cl, closes := c.(io.Closer)
	switch {
	case reports:
		if !closes {
			cl = io.NopCloser(nil)
		}
		sr, _ := c.(SandboxReporter)
		return passReportingCatalog{c, h, sr, cl}
	case closes:
		return passClosingCatalog{c, cl}
	}
	return passCatalog{c}
}

// Store wrappers forward the capabilities of the memory store the
// scenarios use (an index, volatile records).
type (
	passStore        struct{ ledger.Store }
	passIndexedStore struct {
		ledger.IndexedStore
		volatile ledger.VolatileStore
	}
)

func (s passIndexedStore) AppendVolatile(ctx context.Context, recs []ledger.Record) error {
	return s.volatile.AppendVolatile(ctx, recs)
}

func wrapStore(s ledger.Store) ledger.Store {
	is, indexed := s.(ledger.IndexedStore)
	vs, volatile := s.(ledger.VolatileStore)
	if indexed && volatile {
		return passIndexedStore{is, vs}
	}
	return passStore{s}
}

// passApprover is a host's wrapper of an approver.
type passApprover struct{ Approver }

// passRemote is a host's wrapper of the remote runner.
type passRemote struct{ children.RemoteRunner }

// wrapSeams wraps every host-suppliable seam of ro.
func wrapSeams(ro *RuntimeOptions) {
	ro.Authority = wrapAuthority(ro.Authority)
	ro.Store = wrapStore(ro.Store)
	ro.Model = wrapModel(ro.Model)
	for i, c := range ro.Catalogs {
		ro.Catalogs[i] = wrapCatalog(c)
	}
	if open := ro.OpenCatalogs; open != nil {
		ro.OpenCatalogs = func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error) {
			cats, err := open(ctx, task)
			for i, c := range cats {
				cats[i] = wrapCatalog(c)
			}
			return cats, err
		}
	}
	newLedger := ro.NewLedger
	ro.NewLedger = func(ctx context.Context, opts ledger.Options) (ledger.Ledger, error) {
		l, err := newLedger(ctx, opts)
		if err != nil {
			return nil, err
		}
		return passLedger{l}, nil
	}
	if ro.Remote != nil {
		ro.Remote = passRemote{ro.Remote}
	}
}

// seamRun is what one run of a scenario leaves: its events and its ledger
// records (each as JSON, normalised), and what a scenario observed on the
// way (the ledger's state mid-approval, for one).
type seamRun struct {
	events, records, observed []string
}

// seamHost runs deployment d's tasks with deterministic IDs and clock;
// wrapped wraps every seam before the runtime starts.
type seamHost struct {
	t       *testing.T
	wrapped bool
	store   *ledger.MemoryStore
	run     seamRun
	peers   seamPeers
	// start is what the clock reads, the same in both runs (deadlines
	// are taken from it, so it is this test's real start).
	start time.Time
}

func (h *seamHost) runtime(d *Deployment, host HostOptions) *Runtime {
	h.t.Helper()
	var mu sync.Mutex
	n := 0
	host.NewID = func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
	host.Clock = clock.NewManual(h.start)
	h.store = ledger.NewMemoryStore()
	host.Store = h.store
	ro, err := d.runtimeOptions(context.Background(), host)
	if err != nil {
		h.t.Fatal(err)
	}
	// Both runs make their ledgers through NewLedger (a task with one is
	// given payloads to record), so the wrapper is the only difference.
	ro.NewLedger = func(ctx context.Context, opts ledger.Options) (ledger.Ledger, error) {
		return ledger.NewRoot(ctx, opts)
	}
	if h.wrapped {
		wrapSeams(&ro)
	}
	rt, err := NewRuntime(ro)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { rt.Close() })
	return rt
}

func (h *seamHost) approver(a Approver) Approver {
	if h.wrapped {
		return passApprover{a}
	}
	return a
}

// task runs one task to its end and keeps its events and records.
func (h *seamHost) task(rt *Runtime, req TaskRequest) *TaskObject {
	h.t.Helper()
	task, err := rt.StartTask(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	for ev, err := range task.Events() {
		if err != nil {
			h.t.Fatal(err)
		}
		b, _ := json.Marshal(ev)
		h.run.events = append(h.run.events, string(b))
	}
	obj := task.Wait()
	recs, err := h.store.Records(context.Background(), task.ID())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range recs {
		b, _ := json.Marshal(r)
		h.run.records = append(h.run.records, string(b))
	}
	return obj
}

// seamPeers are the real peers the scenarios talk to: the fault MCP
// server's binary, the compaction gateway, the complexity router's
// fixture and the A2A fixture peer's base URL.
type seamPeers struct {
	fault   string
	gateway *compactGateway
	router  *routerTestFixture
	a2a     string
}

// compactGateway is the shared compaction gateway, its counts reset.
func (h *seamHost) compactGateway() *compactGateway {
	g := h.peers.gateway
	g.mu.Lock()
	defer g.mu.Unlock()
	g.normal, g.sums, g.seen, g.messages, g.summaryModels, g.summaryMaxTokens = nil, nil, nil, nil, nil, nil
	return g
}

// seamScenario is one of the engine's suites, run on h.
type seamScenario struct {
	name string
	// concurrent: agents run at once, so the order of their events in
	// the task's one stream (root_seq) is the scheduler's; each agent's
	// own order (seq) is compared.
	concurrent bool
	run        func(t *testing.T, h *seamHost)
}

// seamScenarios are the suites the differential test runs.
func seamScenarios() []seamScenario {
	return []seamScenario{
		{name: "approvals and the mid-approval crash", run: func(t *testing.T, h *seamHost) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			os.WriteFile(filepath.Join(ws, "a.md"), []byte("INV-1042 paid\n"), 0o600)
			script := `{"turns":[
			{"text":["Reading."],"tool_calls":[{"id":"c1","name":"fs_read","arguments":{"path":"a.md"}}]},
			{"text":["Reading again."],"tool_calls":[{"id":"c2","name":"fs_read","arguments":{"path":"a.md"}}]},
			{"text":["Paid."]}]}`
			d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n")
			rt := h.runtime(d, HostOptions{Ask: []authority.ID{authority.FSRead}})
			answers := []approval.Answer{approval.Reject, approval.AllowOnce}
			obj := h.task(rt, TaskRequest{Input: "What was paid?", Approver: h.approver(approverOf(func(ctx context.Context, req approval.Request) (approval.Answer, error) {
				// What a host killed now would leave: the store as it is.
				rep, err := ledger.RecoverTask(ctx, h.store, req.TaskID)
				if err != nil {
					return approval.Reject, err
				}
				b, _ := json.Marshal(rep)
				h.run.observed = append(h.run.observed, string(b))
				a := answers[0]
				answers = answers[1:]
				return a, nil
			}))})
			if obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
			}
		}},
		{name: "fan-in with children", concurrent: true, run: func(t *testing.T, h *seamHost) {
			d, err := Load(LoadOptions{Config: "examples/fanin/deployment.toml", Bindings: map[string]string{"workspace": "examples/fanin/work"}})
			if err != nil {
				t.Fatal(err)
			}
			obj := h.task(h.runtime(d, HostOptions{}), TaskRequest{Input: "Compare the regions."})
			if obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
			}
		}},
		{name: "compaction", run: func(t *testing.T, h *seamHost) {
			g := h.compactGateway()
			d := compactDeployment(t, g, contextTable(1)+"[options.limits]\nmax_context_bytes = 12000\n", 1000)
			obj := h.task(h.runtime(d, HostOptions{LookupEnv: lookupKey}), TaskRequest{Input: "Read big.md until told to stop."})
			if obj.Outcome.Status != event.StatusCompleted || len(compactionRecordsOf(h.run.events)) == 0 {
				t.Fatalf("outcome %s, %d compactions", outcomeJSON(obj.Outcome), len(compactionRecordsOf(h.run.events)))
			}
		}},
		{name: "MCP with a child that names its server", concurrent: true, run: func(t *testing.T, h *seamHost) {
			script := `{"turns":[
			{"tool_calls":[{"id":"e1","name":"mcp/records/echo","arguments":{"message":"root"}}]},
			{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"use records","capabilities":{"tools":["fs.read"],"mcp_servers":["records"]}}}}]},
			{"tool_calls":[{"id":"w1","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
			{"text":["root done"]}],
			"agents":[{"input":"use records","turns":[
				{"tool_calls":[{"id":"m1","name":"mcp/records/echo","arguments":{"message":"hi"}}]},
				{"text":["child done"]}]}]}`
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.children]\nenabled = true\n"+mcpServerTOML(h.peers.fault, "ok", ""))
			obj := h.task(h.runtime(d, HostOptions{}), TaskRequest{Input: "go"})
			if obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
			}
			for _, ev := range h.run.events {
				if strings.Contains(ev, `"type":"run.finished"`) && strings.Contains(ev, `"depth":1`) && !strings.Contains(ev, `"status":"completed"`) {
					t.Fatalf("the child that names the records server did not complete: %s", ev)
				}
			}
		}},
		{name: "a complexity route", run: func(t *testing.T, h *seamHost) {
			f := h.peers.router
			d := routerDeployment(t, f.srv.URL+"/v1/chat/completions", "")
			obj := h.task(h.runtime(d, HostOptions{Model: routerRuntimeModel(t, d, f), LookupEnv: routerLookup}), TaskRequest{Input: "Was INV-1042 paid?"})
			if obj.Outcome.Status != event.StatusCompleted || len(startedRoutesOf(h.run.events)) == 0 {
				t.Fatalf("outcome %s, route records %v", outcomeJSON(obj.Outcome), startedRoutesOf(h.run.events))
			}
		}},
		{name: "spawn_remote over A2A", concurrent: true, run: func(t *testing.T, h *seamHost) {
			base := h.peers.a2a
			if base == "" {
				t.Skip("real-peer scenario skipped: PABLO_SKIP_PEERS=1")
			}
			dir := t.TempDir()
			cfg := filepath.Join(dir, "deployment.toml")
			body := "schema_version = 1\n[options.children]\nenabled = true\n[options.a2a.remotes.fixture]\ncard_url = \"" + base + "/.well-known/agent-card.json\"\nendpoint = \"" + base + "/rpc\"\n"
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := Load(LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": dir}, LoopbackHTTP: true})
			if err != nil {
				t.Fatal(err)
			}
			obj := h.task(h.runtime(d, HostOptions{Model: &remoteModel{text: "echo:delegated"}}), TaskRequest{Input: "delegate the review"})
			if obj.Outcome.Status != event.StatusCompleted || !strings.Contains(*obj.Outcome.Output, "delegated") {
				t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
			}
		}},
	}
}

// startedRoutesOf is the route records of a run's model.started events.
func startedRoutesOf(events []string) []string {
	var out []string
	for _, l := range events {
		var ev event.Event
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == event.ModelStarted && ev.ModelRoute != nil {
			out = append(out, ev.ModelRoute.Entry+"/"+ev.ModelRoute.SelectionReason)
		}
	}
	return out
}

type approverOf func(ctx context.Context, req approval.Request) (approval.Answer, error)

func (f approverOf) Approve(ctx context.Context, req approval.Request) (approval.Answer, error) {
	return f(ctx, req)
}

// compactionRecordsOf counts the compaction.finished events of a run.
func compactionRecordsOf(events []string) []string {
	var out []string
	for _, ev := range events {
		if strings.Contains(ev, `"type":"context.compaction.finished"`) {
			out = append(out, ev)
		}
	}
	return out
}

// normalise makes a run comparable: within concurrent scenarios the
// interleaving of agents (root_seq, a record's n) is dropped and the lines
// sorted, and the IDs they draw from the one source replaced (with the
// digests of call arguments and results that name them); process IDs and start
// times, which the kernel chooses, and a child's duration
// ceiling (the time left when it starts) are dropped everywhere.
func normalise(lines []string, concurrent bool) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			out = append(out, l)
			continue
		}
		v = scrub(v, concurrent)
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	if concurrent {
		slices.Sort(out)
	}
	return out
}

func isDigest(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "sha256:")
}

// generatedID is what the test's ID source makes.
var generatedID = regexp.MustCompile(`00000000-0000-4000-8000-[0-9]{12}`)

func scrub(v any, concurrent bool) any {
	switch x := v.(type) {
	case string:
		if concurrent {
			// Agents running at once draw IDs from the one source in
			// the scheduler's order.
			return generatedID.ReplaceAllString(x, "<id>")
		}
	case map[string]any:
		for k, e := range x {
			switch {
			case k == "pid" || k == "pgid" || k == "leader_start":
				delete(x, k)
			case k == "remote_task":
				// The IDs a remote peer bound its task under: the
				// peer's own, new on each run.
				if rt, ok := e.(map[string]any); ok {
					delete(rt, "task_id")
					delete(rt, "context_id")
				}
			case concurrent && (k == "root_seq" || k == "n" || k == "arguments_digest" || k == "idempotency_key"):
				delete(x, k)
			case concurrent && isDigest(e) && (k == "result" || k == "ref" || k == "digest" || k == "id"):
				// The content address of a result that names IDs.
				delete(x, k)
			case k == "limits":
				// A child's duration ceiling is what is left of its
				// parent's when it starts, on the supervisor's clock.
				if l, ok := e.(map[string]any); ok {
					delete(l, "duration_ms")
				}
			default:
				x[k] = scrub(e, concurrent)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = scrub(e, concurrent)
		}
	}
	return v
}

// TestWrappedSeamsChangeNothing: every seam a host supplies, wrapped in a
// pass-through struct, leaves the engine's behaviour as it was. approval.Records
// (with the ledger's state while the approver thinks: the durability
// barrier), fan-in with children, compaction, and MCP with a child naming
// its server each give the same events and ledger records with every seam
// wrapped as without; so do a complexity route and spawn_remote over A2A.
func TestWrappedSeamsChangeNothing(t *testing.T) {
	t.Parallel()
	// The peers are shared by both runs (their addresses are in the
	// deployments' fingerprints) and started before the subtests.
	shared := seamPeers{fault: buildFaultServer(t), gateway: newCompactGateway(t, 12),
		router: newRouterTestFixture(t, chooses("complex"))}
	if os.Getenv("PABLO_SKIP_PEERS") != "1" {
		shared.a2a = a2aFixturePeer(t)
	}
	start := time.Now().UTC().Truncate(time.Millisecond)
	for _, sc := range seamScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			runs := [2]seamRun{}
			for i, wrapped := range []bool{false, true} {
				t.Logf("run %d: every seam wrapped: %v", i+1, wrapped)
				h := &seamHost{t: t, wrapped: wrapped, peers: shared, start: start}
				sc.run(t, h)
				runs[i] = seamRun{events: normalise(h.run.events, sc.concurrent), records: normalise(h.run.records, sc.concurrent),
					observed: normalise(h.run.observed, false)}
			}
			for _, part := range []struct {
				name      string
				bare, wrp []string
			}{
				{"events", runs[0].events, runs[1].events},
				{"ledger records", runs[0].records, runs[1].records},
				{"ledger states mid-approval", runs[0].observed, runs[1].observed},
			} {
				if len(part.bare) != len(part.wrp) {
					t.Errorf("%s: %d bare, %d with every seam wrapped", part.name, len(part.bare), len(part.wrp))
				}
				for i := range min(len(part.bare), len(part.wrp)) {
					if part.bare[i] != part.wrp[i] {
						t.Errorf("%s differ at %d:\nbare:    %s\nwrapped: %s", part.name, i, part.bare[i], part.wrp[i])
						break
					}
				}
			}
		})
	}
}

// TestChildInheritsMCPServersWhateverTheAuthority: a child's scope is what
// the runtime admitted for its parent, not what the authority's concrete
// type can list. Under HostOptions.Ask (the runtime's own approval gate
// wraps the deployment's authority), a spawn that names the MCP server
// whose tools the root is offered is admitted and its call completes.
func TestChildInheritsMCPServersWhateverTheAuthority(t *testing.T) {
	t.Parallel()
	bin := buildFaultServer(t)
	script := `{"turns":[
		{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"use records","capabilities":{"tools":[],"mcp_servers":["records"]}}}}]},
		{"tool_calls":[{"id":"w1","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
		{"text":["root done"]}],
		"agents":[{"input":"use records","turns":[
			{"tool_calls":[{"id":"m1","name":"mcp/records/echo","arguments":{"message":"hi"}}]},
			{"text":["child done"]}]}]}`
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	d := scriptDeployment(t, dir, ws, script, "[options.children]\nenabled = true\n"+mcpServerTOML(bin, "ok", ""))
	rt, err := d.NewRuntime(context.Background(), HostOptions{Ask: []authority.ID{authority.ShellRun}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, static := rt.opts.Authority.(authority.Static); static {
		t.Fatal("the asking gate is a bare *authority.Set: the test proves nothing")
	}
	obj, events := runTask(t, rt, "go")
	var spawn, child *event.Event
	for i, ev := range events {
		switch {
		case ev.Type == event.ToolFinished && ev.Agent.Depth == 0 && spawn == nil:
			spawn = &events[i]
		case ev.Type == event.RunFinished && ev.Agent.Depth == 1:
			child = &events[i]
		}
	}
	if spawn == nil || !strings.Contains(string(spawn.Result), `"status":"completed"`) {
		t.Fatalf("the spawn naming the records server was refused: %s", resultOf(spawn))
	}
	if child == nil || child.Outcome.Status != event.StatusCompleted || obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(child)
		t.Fatalf("the child did not complete its call to the server it named: %s (root %s)", b, outcomeJSON(obj.Outcome))
	}
}
