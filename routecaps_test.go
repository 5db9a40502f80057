package pablo

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/graph"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/config"
)

// routeDoc is two named models, first declaring caps, and the route main
// over both (with required, when set).
func routeDoc(caps, required string) string {
	doc := "[options.models.first]\nprovider = \"vercel\"\nid = \"first-id\"\ncredential = \"gw\"\n" + caps +
		"[options.models.second]\nprovider = \"openrouter\"\nid = \"second-id\"\ncredential = \"or\"\n" +
		"[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n" + required +
		"[options]\nmodel_route = \"main\"\n" +
		"[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n" +
		"[credentials.or]\nconsumer = \"provider.openrouter\"\nsources = [{ kind = \"environment\", name = \"OR\" }]\n"
	return doc
}

// A route entry whose model lacks a capability the route requires is
// never selected: the runtime skips it, so the provider never sees its
// model, and the graph marks it unsupported while the route stays ready.
func TestRouteNeverSelectsAnEntryLackingARequiredCapability(t *testing.T) {
	f := newChatFixture(t, false)
	// The workspace tools are on, so the default requirement includes
	// tool_calls, which first declares it lacks.
	d := providerDeployment(t, routeDoc("capabilities = { tool_calls = false }\n", ""), nil)
	m, err := d.FixtureModel(f.srv.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := runProviderTask(t, d, HostOptions{Model: m})
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	for _, model := range f.models {
		if model != "second-id" {
			t.Fatalf("the provider saw %q; only second-id may be selected (requests %v)", model, f.models)
		}
	}
	g := mustGraph(t, d, graph.Options{HostModel: true})
	wantState(t, g, "model:first", graph.Unsupported, "model_capability_missing")
	wantState(t, g, "model:second", graph.Ready, "")
	wantState(t, g, "route:main", graph.Ready, "")
	if n, _ := g.Node("route:main"); n.Attributes["required_capabilities"] != "text_streaming,tool_calls" {
		t.Fatalf("route attributes %v", n.Attributes)
	}
}

// A route with no entry that supports what it requires is unsupported in
// the graph, its cause each entry's missing capability, and refused when
// a runtime is built from it: a config error at the route's
// required_capabilities naming the route and what each entry lacks. One
// entry that supports it is enough, a requirement the route does not
// state is not held against it, and a nested route's entries inherit the
// outer route's.
func TestRouteWithNoSatisfiableEntryIsRefused(t *testing.T) {
	keys := func(string) (string, bool) { return "key", true }
	refusal := func(t *testing.T, doc string) *deployment.Error {
		t.Helper()
		d := providerDeployment(t, doc, nil)
		rt, err := d.NewRuntime(context.Background(), HostOptions{LookupEnv: keys})
		if err == nil {
			rt.Close()
			return nil
		}
		var ce *deployment.Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
			t.Fatalf("want a *deployment.Error, got %v", err)
		}
		return ce
	}
	both := "capabilities = { tool_calls = false }\n"
	noTools := strings.Replace(routeDoc(both, ""), "[options.models.second]\n", "[options.models.second]\ncapabilities = { tool_calls = false }\n", 1)
	ce := refusal(t, noTools)
	if ce == nil || ce.Code != config.CodeInvalidValue || ce.Option != "/options/routes/main/required_capabilities" {
		t.Fatalf("want config_invalid_value at the route's required_capabilities, got %v", ce)
	}
	for _, want := range []string{`route "main"`, `model "first" lacks tool_calls`, `model "second" lacks tool_calls`} {
		if !strings.Contains(ce.Message, want) {
			t.Errorf("the message %q does not say %s", ce.Message, want)
		}
	}
	g := mustGraph(t, providerDeployment(t, noTools, nil), graph.Options{LookupEnv: keys})
	wantState(t, g, "route:main", graph.Unsupported, "model_capability_missing")
	// Asking only for text streaming, the same models serve.
	if ce := refusal(t, strings.Replace(noTools, "entries = [{ model = \"first\" }, { model = \"second\" }]\n", "entries = [{ model = \"first\" }, { model = \"second\" }]\nrequired_capabilities = [\"text_streaming\"]\n", 1)); ce != nil {
		t.Fatalf("text_streaming alone is satisfiable: %v", ce)
	}
	// With no tool enabled, the default requirement is text streaming.
	if ce := refusal(t, "[options.filesystem]\nenabled = false\n"+noTools); ce != nil {
		t.Fatalf("without tools the default requirement is text_streaming: %v", ce)
	}
	// One satisfiable entry is enough.
	if ce := refusal(t, routeDoc(both, "")); ce != nil {
		t.Fatalf("second supports tool_calls: %v", ce)
	}
	// A nested route's entries inherit the outer route's requirement.
	nested := strings.Replace(noTools, "[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n",
		"[options.routes.inner]\nentries = [{ model = \"first\" }, { model = \"second\" }]\nrequired_capabilities = [\"text_streaming\"]\n[options.routes.main]\nentries = [{ route = \"inner\" }]\nrequired_capabilities = [\"tool_calls\"]\n", 1)
	if ce := refusal(t, nested); ce == nil || ce.Option != "/options/routes/main/required_capabilities" {
		t.Fatalf("the outer route's requirement reaches the inner entries: %v", ce)
	}
	// structured_output is recognized, and no adapter supports it.
	if ce := refusal(t, routeDoc("", "required_capabilities = [\"structured_output\"]\n")); ce == nil || ce.Code != config.CodeUnsupportedFeature || !strings.Contains(ce.Message, "structured_output") {
		t.Fatalf("structured_output: %v", ce)
	}
}
