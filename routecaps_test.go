package pablo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if obj.Outcome.Status != StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	for _, model := range f.models {
		if model != "second-id" {
			t.Fatalf("the provider saw %q; only second-id may be selected (requests %v)", model, f.models)
		}
	}
	g := mustGraph(t, d, GraphOptions{HostModel: true})
	wantState(t, g, "model:first", Unsupported, "model_capability_missing")
	wantState(t, g, "model:second", Ready, "")
	wantState(t, g, "route:main", Ready, "")
	if n, _ := g.Node("route:main"); n.Attributes["required_capabilities"] != "text_streaming,tool_calls" {
		t.Fatalf("route attributes %v", n.Attributes)
	}
}

// A route with no entry that supports what it requires is refused at
// load: a config error naming the route's required_capabilities and the
// capability each entry lacks. One entry that supports it is enough, and
// a requirement the route does not state is not held against it.
func TestRouteWithNoSatisfiableEntryIsRefusedAtLoad(t *testing.T) {
	load := func(doc string) error {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, "work"), 0o700)
		p := filepath.Join(dir, "d.toml")
		os.WriteFile(p, []byte("schema_version = 1\n"+doc), 0o600)
		_, err := Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": filepath.Join(dir, "work")}})
		return err
	}
	both := "capabilities = { tool_calls = false }\n"
	noTools := strings.Replace(routeDoc(both, ""), "[options.models.second]\n", "[options.models.second]\ncapabilities = { tool_calls = false }\n", 1)
	err := load(noTools)
	var ce *ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) || ce.Code != config.CodeInvalidValue || ce.Option != "/options/routes/main/required_capabilities" {
		t.Fatalf("want config_invalid_value at the route's required_capabilities, got %v", err)
	}
	for _, want := range []string{`route "main"`, `model "first" lacks tool_calls`, `model "second" lacks tool_calls`} {
		if !strings.Contains(ce.Message, want) {
			t.Errorf("the message %q does not say %s", ce.Message, want)
		}
	}
	// Asking only for text streaming, the same models serve.
	if err := load(strings.Replace(noTools, "entries = [{ model = \"first\" }, { model = \"second\" }]\n", "entries = [{ model = \"first\" }, { model = \"second\" }]\nrequired_capabilities = [\"text_streaming\"]\n", 1)); err != nil {
		t.Fatalf("text_streaming alone is satisfiable: %v", err)
	}
	// With no tool enabled, the default requirement is text streaming.
	if err := load("[options.filesystem]\nenabled = false\n[options.shell]\nenabled = false\n" + noTools); err != nil {
		t.Fatalf("without tools the default requirement is text_streaming: %v", err)
	}
	// One satisfiable entry is enough.
	if err := load(routeDoc(both, "")); err != nil {
		t.Fatalf("second supports tool_calls: %v", err)
	}
	// A nested route's entries inherit the outer route's requirement.
	nested := strings.Replace(noTools, "[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n",
		"[options.routes.inner]\nentries = [{ model = \"first\" }, { model = \"second\" }]\nrequired_capabilities = [\"text_streaming\"]\n[options.routes.main]\nentries = [{ route = \"inner\" }]\nrequired_capabilities = [\"tool_calls\"]\n", 1)
	if err := load(nested); !errors.As(err, &ce) || ce.Option != "/options/routes/main/required_capabilities" {
		t.Fatalf("the outer route's requirement reaches the inner entries: %v", err)
	}
	// structured_output is recognized, and no adapter supports it.
	err = load(routeDoc("", "required_capabilities = [\"structured_output\"]\n"))
	if !errors.As(err, &ce) || ce.Code != config.CodeUnsupportedFeature || !strings.Contains(ce.Message, "structured_output") {
		t.Fatalf("structured_output: %v", err)
	}
}
