package pablo

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/internal/providertest"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// anthropicDemo is a deployment of the Anthropic fixture at endpoint with
// extra TOML (limits, prices) appended to its model and limits tables.
func anthropicDemo(endpoint, model, limits string) string {
	return "[credentials.ant]\nconsumer = \"provider.anthropic\"\nsources = [{ kind = \"environment\", name = \"LOCAL_KEY\" }]\n" +
		"[options.model]\nprovider = \"anthropic\"\nid = \"claude-sonnet-4-5\"\ncredential = \"ant\"\nendpoint = \"" + endpoint + "\"\n" + model +
		"[options.limits]\n" + limits
}

// demoFixture is the Anthropic fixture of the demo task: a tool call,
// then an answer. Every answer reports 11 input, 3 cache-read and 7
// output tokens.
func demoFixture(t *testing.T) *providertest.Server {
	srv := providertest.New(providertest.Options{Wire: providertest.Anthropic, Turns: []providertest.Turn{
		{Calls: []providertest.Call{{ID: "call_1", Name: "fs_read", Args: `{"path":"evidence.md"}`}}},
		{Text: "Paid on time."},
	}})
	t.Cleanup(srv.Close)
	return srv
}

var maxTokensOnWire = regexp.MustCompile(`"max_tokens":(\d+)`)

func wireMaxTokens(t *testing.T, body []byte) uint64 {
	t.Helper()
	m := maxTokensOnWire.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no max_tokens in %s", body)
	}
	n, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return n
}

// The acceptance: under max_total_tokens each live call's worst
// case (its body's size plus the documented overhead, plus max_tokens) is
// reserved before it is sent, so a task completes when its calls fit and
// ends limit_exceeded before the call that could pass the ceiling, which
// never reaches the provider. At the limit and one past: the ceiling the
// first call's bound exactly fills admits it and refuses the second.
func TestTokenCeilingRefusesTheCallThatCouldPassIt(t *testing.T) {
	t.Parallel()
	const out = "max_output_tokens = 1024\n"
	free := demoFixture(t)
	obj, _ := runProviderTask(t, providerDeployment(t, anthropicDemo(free.Endpoint(), "", out+"max_total_tokens = \"1000000\"\n"), nil), HostOptions{LookupEnv: lookupKey})
	if obj.Outcome.Status != event.StatusCompleted || free.Requests() != 2 {
		t.Fatalf("under a ceiling it fits: %s after %d requests", outcomeJSON(obj.Outcome), free.Requests())
	}
	first := uint64(len(free.Bodies()[0])) + providers.BoundOverheadTokens + 1024
	tight := demoFixture(t)
	ceiling := strconv.FormatUint(first, 10)
	obj, _ = runProviderTask(t, providerDeployment(t, anthropicDemo(tight.Endpoint(), "", out+"max_total_tokens = \""+ceiling+"\"\n"), nil), HostOptions{LookupEnv: lookupKey})
	if obj.Outcome.Status != event.StatusLimitExceeded || obj.Outcome.Limit != outcome.LimitTotalTokens || tight.Requests() != 1 {
		t.Fatalf("a ceiling the first bound fills: %s after %d requests, want limit_exceeded total_tokens after 1", outcomeJSON(obj.Outcome), tight.Requests())
	}
	if n := obj.Accounting.ChargedTokens.N; n != 18 || obj.Accounting.ChargedTokens.Unknown {
		t.Fatalf("charged %v, want the first call's actual 11+7", obj.Accounting.ChargedTokens)
	}
}

// When a token ceiling leaves less than a call's full allowance, the
// call is sent with max_tokens lowered to what the ceiling leaves, so its
// worst case still fits: the task completes under a ceiling far below
// the default 65,536-token allowance, on a plain model and on a route's
// entry alike.
func TestTokenCeilingLowersTheOutputAllowance(t *testing.T) {
	t.Parallel()
	probe := demoFixture(t)
	runProviderTask(t, providerDeployment(t, anthropicDemo(probe.Endpoint(), "", "max_output_tokens = 1024\n"), nil), HostOptions{LookupEnv: lookupKey})
	ceiling := uint64(len(probe.Bodies()[1])) + providers.BoundOverheadTokens + 5000
	limit := "max_total_tokens = \"" + strconv.FormatUint(ceiling, 10) + "\"\n"
	for name, body := range map[string]func(endpoint string) string{
		"model": func(ep string) string { return anthropicDemo(ep, "", limit) },
		"route": func(ep string) string {
			return "[credentials.ant]\nconsumer = \"provider.anthropic\"\nsources = [{ kind = \"environment\", name = \"LOCAL_KEY\" }]\n" +
				"[options.models.a]\nprovider = \"anthropic\"\nid = \"claude-sonnet-4-5\"\ncredential = \"ant\"\nendpoint = \"" + ep + "\"\n" +
				"[options.routes.main]\nentries = [{ model = \"a\" }]\n[options]\nmodel_route = \"main\"\n[options.limits]\n" + limit
		},
	} {
		srv := demoFixture(t)
		obj, _ := runProviderTask(t, providerDeployment(t, body(srv.Endpoint()), nil), HostOptions{LookupEnv: lookupKey})
		if obj.Outcome.Status != event.StatusCompleted || srv.Requests() != 2 {
			t.Fatalf("%s: %s after %d requests", name, outcomeJSON(obj.Outcome), srv.Requests())
		}
		used := uint64(0)
		for i, body := range srv.Bodies() {
			mt := wireMaxTokens(t, body)
			bound := uint64(len(body)) + providers.BoundOverheadTokens + mt
			if mt >= 65536 || mt < 1024 || bound > ceiling-used || bound+8 < ceiling-used {
				t.Fatalf("%s: request %d: max_tokens %d, bound %d, %d left of %d", name, i+1, mt, bound, ceiling-used, ceiling)
			}
			used += 18
		}
		if n := obj.Accounting.ChargedTokens.N; n != 36 {
			t.Fatalf("%s: charged %v", name, obj.Accounting.ChargedTokens)
		}
	}
}

// The acceptance: a task under max_cost_microusd against a
// fixture with prices completes when it fits and ends limit_exceeded
// before the call that would pass it. Input costs 1 micro-USD per million
// tokens and output 1000 per token, so each call's worst case is 1 +
// 1024*1000 and each actual 7001 (11+3 input, 7 output, rounded up): the
// second call fits a ceiling of 7001 + 1024001 and not one less.
func TestCostCeilingRefusesTheCallThatCouldPassIt(t *testing.T) {
	t.Parallel()
	prices := "pricing = { input = 1, output = 1000000000 }\n"
	for _, c := range []struct {
		ceiling  string
		status   outcome.Status
		requests int
	}{
		{"1031002", event.StatusCompleted, 2},
		{"1031001", event.StatusLimitExceeded, 1},
		{"1024000", event.StatusLimitExceeded, 0},
	} {
		srv := demoFixture(t)
		store := ledger.NewMemoryStore()
		obj, _ := runProviderTask(t, providerDeployment(t, anthropicDemo(srv.Endpoint(), prices, "max_output_tokens = 1024\nmax_cost_microusd = \""+c.ceiling+"\"\n"), nil), HostOptions{LookupEnv: lookupKey, Store: store})
		if obj.Outcome.Status != c.status || srv.Requests() != c.requests {
			t.Fatalf("ceiling %s: %s after %d requests, want %s after %d", c.ceiling, outcomeJSON(obj.Outcome), srv.Requests(), c.status, c.requests)
		}
		if c.status == event.StatusLimitExceeded && obj.Outcome.Limit != outcome.LimitCost {
			t.Fatalf("ceiling %s: %s", c.ceiling, outcomeJSON(obj.Outcome))
		}
		if want := uint64(7001 * c.requests); obj.Accounting.ChargedCostMicroUSD.N != want {
			t.Fatalf("ceiling %s: charged %v, want %d", c.ceiling, obj.Accounting.ChargedCostMicroUSD, want)
		}
		// The ledger records each sent call's bound when it is admitted
		// and its actual when it settles: the body's size plus the
		// overhead plus 1024 tokens, 1 + 1024000 micro-USD; 18 tokens and
		// 7001 micro-USD.
		tasks, _ := store.Tasks(context.Background())
		recs, err := store.Records(context.Background(), tasks[0])
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, r := range recs {
			if r.Call == nil || r.Call.Kind != ledger.ModelCallKind {
				continue
			}
			switch r.Call.State {
			case ledger.CallAdmitted:
				if sent < c.requests {
					want := uint64(len(srv.Bodies()[sent])) + providers.BoundOverheadTokens + 1024
					if tb, _ := r.Call.TokenBound.Value(); tb != want {
						t.Fatalf("ceiling %s: call %d token bound %v, want %d", c.ceiling, sent+1, r.Call.TokenBound, want)
					}
					if cb, _ := r.Call.CostBound.Value(); cb != 1024001 {
						t.Fatalf("ceiling %s: call %d cost bound %v", c.ceiling, sent+1, r.Call.CostBound)
					}
				}
				sent++
			case ledger.CallSettled:
				if r.Call.ChargedTokens.N != 18 || r.Call.ChargedCost.N != 7001 {
					t.Fatalf("ceiling %s: settled charges %v %v", c.ceiling, r.Call.ChargedTokens, r.Call.ChargedCost)
				}
			}
		}
		if sent != c.requests {
			t.Fatalf("ceiling %s: %d model calls admitted, want %d", c.ceiling, sent, c.requests)
		}
	}
}

// sharedCeilingTree is the seed's fan-in over the Anthropic fixture: the
// root (scripted here, each call attesting a 2-token bound and using 1)
// spawns two children, waits for both and answers; each child's one call
// is the fixture's adapter, held until both children's calls are in
// flight, so their reservations stand side by side on the root's ledger.
type sharedCeilingTree struct {
	child   model.Model
	inGen   chan struct{}
	release chan struct{}
	// waiting is closed when the root's call that waits for the children
	// is generated: its reservation stands before either child reserves,
	// so the children divide what it leaves rather than racing it.
	waiting     chan struct{}
	waitingOnce sync.Once
}

const sharedCeilingRoot = "Compare the two reports."

func (m *sharedCeilingTree) Info() model.Info {
	return model.Info{Provider: "anthropic", Model: "claude-sonnet-4-5"}
}

func (m *sharedCeilingTree) Bound(req *model.Request) (model.Bound, error) {
	if req.Messages[0].Content == sharedCeilingRoot {
		return model.Bound{InputTokens: 1, OutputTokens: 1, Priced: true, InputCostMicroUSD: 1, OutputPrice: 1_000_000}, nil
	}
	select {
	case <-m.waiting:
	case <-time.After(30 * time.Second): // a root that never waits fails below
	}
	return m.child.(model.Bounder).Bound(req)
}

func (m *sharedCeilingTree) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	if req.Messages[0].Content != sharedCeilingRoot {
		m.inGen <- struct{}{}
		select {
		case <-m.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return m.child.Generate(ctx, req, emit)
	}
	one, zero := uint64(1), uint64(0)
	resp := &model.Response{UsageReported: true, Usage: model.Usage{InputTokens: &one, OutputTokens: &zero, CostMicroUSD: &one}, FinishReason: model.FinishToolCalls}
	var ids []string
	waited := false
	for _, msg := range req.Messages {
		if msg.Role != model.RoleTool {
			continue
		}
		waited = waited || strings.Contains(msg.Content, `"action":"wait"`)
		var v struct {
			Subagent struct {
				Agent struct {
					AgentID string `json:"agent_id"`
				} `json:"agent"`
			} `json:"subagent"`
		}
		if json.Unmarshal([]byte(msg.Content), &v) == nil && v.Subagent.Agent.AgentID != "" {
			ids = append(ids, `"`+v.Subagent.Agent.AgentID+`"`)
		}
	}
	call := func(id, args string) model.ToolCall {
		return model.ToolCall{ID: id, Name: "subagent", Arguments: json.RawMessage(args)}
	}
	switch {
	case len(req.Messages) == 1:
		resp.ToolCalls = []model.ToolCall{
			call("s1", `{"action":"spawn","request":{"input":"report A","capabilities":{"tools":[]}}}`),
			call("s2", `{"action":"spawn","request":{"input":"report B","capabilities":{"tools":[]}}}`),
		}
	case len(ids) == 2 && !waited:
		m.waitingOnce.Do(func() { close(m.waiting) })
		resp.ToolCalls = []model.ToolCall{call("w1", `{"action":"wait","agent_ids":[`+strings.Join(ids, ",")+`],"mode":"all","timeout_ms":60000}`)}
	default:
		resp.FinishReason, resp.Text = model.FinishStop, "compared"
	}
	return resp, nil
}

// The acceptance: two children under one root ceiling never
// overshoot it, for tokens and for cost. Both children's calls are held
// in flight together; the first reserves its full worst case (its body,
// the overhead, 65,536 output tokens: at one micro-USD a token, the same
// figure in micro-USD), so the second is sent with max_tokens lowered to
// what the root's ceiling leaves, and the two bounds together fit the
// ceiling with nothing to spare beyond the root's own few units.
func TestTwoChildrenUnderOneRootCeilingNeverOvershootIt(t *testing.T) {
	t.Parallel()
	const ceiling = 111072
	for _, c := range []struct{ name, model, limit string }{
		{"total_tokens", "", "max_total_tokens"},
		{"cost", "pricing = { input = 1000000, output = 1000000 }\n", "max_cost_microusd"},
	} {
		srv := providertest.New(providertest.Options{Wire: providertest.Anthropic})
		defer srv.Close()
		d := providerDeployment(t, anthropicDemo(srv.Endpoint(), c.model, c.limit+" = \""+strconv.Itoa(ceiling)+"\"\n")+"[options.children]\nenabled = true\n", nil)
		child, err := d.FixtureModel(srv.Endpoint())
		if err != nil {
			t.Fatal(err)
		}
		m := &sharedCeilingTree{child: child, inGen: make(chan struct{}), release: make(chan struct{}), waiting: make(chan struct{})}
		go func() {
			<-m.inGen
			<-m.inGen
			close(m.release)
		}()
		rt, err := d.NewRuntime(context.Background(), HostOptions{Model: m})
		if err != nil {
			t.Fatal(err)
		}
		obj, _ := runTask(t, rt, sharedCeilingRoot)
		rt.Close()
		if obj.Outcome.Status != event.StatusCompleted || srv.Requests() != 2 {
			t.Fatalf("%s: %s after %d child requests", c.name, outcomeJSON(obj.Outcome), srv.Requests())
		}
		var bounds []uint64
		full := 0
		for _, body := range srv.Bodies() {
			mt := wireMaxTokens(t, body)
			if mt == 65536 {
				full++
			}
			bounds = append(bounds, uint64(len(body))+providers.BoundOverheadTokens+mt)
		}
		// The root's calls reserve 2 units each; two of them at most are
		// charged or held while the children run.
		if full != 1 || bounds[0]+bounds[1] > ceiling || bounds[0]+bounds[1]+16 < ceiling {
			t.Fatalf("%s: child bounds %v (%d at the full allowance) for a ceiling of %d", c.name, bounds, full, ceiling)
		}
		charged := obj.Accounting.ChargedTokens
		if c.name == "cost" {
			charged = obj.Accounting.ChargedCostMicroUSD
		}
		if charged.Unknown || charged.N > ceiling || charged.N == 0 {
			t.Fatalf("%s: charged %v for a ceiling of %d", c.name, charged, ceiling)
		}
	}
}
