package config

import (
	"os"
	"path/filepath"
	"testing"
)

// Each [[authority]] field is a ceiling the resolved deployment must fit:
// a value outside it is config_authority_violation at that field, naming
// the layer; the same deployment inside it loads.
func TestAuthorityLayerFieldsAreCeilings(t *testing.T) {
	gw := "[credentials.gateway]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n"
	ws := "{ base = \"binding\", name = \"workspace\", path = \".\" }"
	for field, c := range map[string]struct{ body, outside, inside string }{
		"model_ids":          {gw, "model_ids = [\"other\"]", "model_ids = [\"zai/glm-5.3-flash\"]"},
		"provider_endpoints": {gw, "provider_endpoints = [\"https://other.example/v1\"]", "provider_endpoints = [\"" + VercelEndpoint + "\"]"},
		"credential_ids":     {gw, "credential_ids = [\"other\"]", "credential_ids = [\"gateway\"]"},
		"otel_endpoints": {"[options.otel]\nexporter = \"otlp\"\nendpoint = \"https://otel.example/v1/traces\"\n",
			"otel_endpoints = [\"https://elsewhere.example/v1/traces\"]", "otel_endpoints = [\"https://otel.example/v1/traces\"]"},
		"capture_content": {"[options.trace]\ncapture_content = true\npath = { base = \"workspace\", path = \"t.jsonl\" }\n", "capture_content = false", "capture_content = true"},
		"workspace_roots": {"[options.run]\nworkspace = { base = \"binding\", name = \"workspace\", path = \"sub\" }\n",
			"workspace_roots = [{ base = \"binding\", name = \"workspace\", path = \"other\" }]", "workspace_roots = [" + ws + "]"},
		"skill_roots": {"[options.skills.roots]\nteam = { base = \"binding\", name = \"workspace\", path = \"skills\" }\n",
			"skill_roots = [{ base = \"binding\", name = \"workspace\", path = \"other\" }]", "skill_roots = [" + ws + "]"},
		"a2a_remotes": {"[options.a2a.remotes.rev]\ncard_url = \"https://agent.example/card.json\"\nendpoint = \"https://agent.example/a2a\"\n",
			"a2a_remotes = { rev = { card_url = \"https://agent.example/card.json\", endpoint = \"https://other.example/a2a\" } }",
			"a2a_remotes = { rev = { card_url = \"https://agent.example/card.json\", endpoint = \"https://agent.example/a2a\" } }"},
	} {
		t.Run(field, func(t *testing.T) {
			doc := func(layer string) string {
				return "schema_version = 1\n" + c.body + "[[authority]]\nid = \"ceiling\"\n" + layer + "\n"
			}
			_, err := loadString(t, doc(c.outside), mkdirs("sub", "skills"))
			ce := wantCode(t, err, CodeAuthorityViolation, "/authority/0/"+field)
			if ce.AuthorityID != "ceiling" {
				t.Fatalf("the layer is not named: %v", ce)
			}
			if _, err := loadString(t, doc(c.inside), mkdirs("sub", "skills")); err != nil {
				t.Fatalf("inside the ceiling: %v", err)
			}
		})
	}
}

// mkdirs makes directories inside the workspace binding before the load.
func mkdirs(dirs ...string) func(*LoadOptions) {
	return func(o *LoadOptions) {
		for _, d := range dirs {
			os.MkdirAll(filepath.Join(o.Bindings["workspace"], d), 0o700)
		}
	}
}

// The selected route's router endpoint is a provider endpoint: a layer's
// provider_endpoints must list it.
func TestRouterEndpointIsAProviderEndpoint(t *testing.T) {
	doc := func(endpoints string) string {
		return "schema_version = 1\n[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n" +
			"[options.models.fast]\nprovider = \"vercel\"\nid = \"f\"\ncredential = \"gw\"\n[options.models.deep]\nprovider = \"vercel\"\nid = \"d\"\ncredential = \"gw\"\n" +
			"[options]\nmodel_route = \"c\"\n[options.routes.c]\nentries = [{ model = \"fast\" }, { model = \"deep\" }]\n" +
			"[options.routes.c.router]\nprovider = \"vercel\"\nmodel = \"typesafe-ai/jev\"\ncredential = \"gw\"\ninstructions = \"Classify.\"\ntimeout_ms = 1000\n" +
			"[options.routes.c.router.categories.simple]\ndescription = \"easy\"\nmodel = \"fast\"\n[options.routes.c.router.categories.complex]\ndescription = \"hard\"\nmodel = \"deep\"\n" +
			"[[authority]]\nid = \"ceiling\"\nprovider_endpoints = [" + endpoints + "]\n"
	}
	_, err := loadString(t, doc(`"`+VercelEndpoint+`"`))
	wantCode(t, err, CodeAuthorityViolation, "/authority/0/provider_endpoints")
	if _, err := loadString(t, doc(`"`+VercelEndpoint+`", "`+RouterEndpoint+`"`)); err != nil {
		t.Fatal(err)
	}
}
