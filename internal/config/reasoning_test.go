package config

import (
	"strings"
	"testing"
)

// model.reasoning_capabilities (and a named model's capabilities.reasoning)
// hold the reasoning request: an effort outside efforts, "none" on a
// mandatory model and a budget without token_budget are refused at load,
// naming the request and the declaration; what fits loads. A per-run
// override of model.reasoning is held to the same declaration.
func TestReasoningCapabilitiesHoldTheRequest(t *testing.T) {
	single := func(reasoning, caps string) string {
		return "schema_version = 1\n[options.model]\nreasoning = " + reasoning + "\nreasoning_capabilities = " + caps + "\n"
	}
	named := func(reasoning, caps string) string {
		return "schema_version = 1\n[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n" +
			"[options.models.m]\nprovider = \"vercel\"\nid = \"x\"\ncredential = \"gw\"\nmodel_options = { reasoning = " + reasoning + " }\ncapabilities = { reasoning = " + caps + " }\n"
	}
	for name, c := range map[string]struct {
		doc    string
		option string // "" loads
		says   string
	}{
		"listed effort":           {single(`"low"`, `{ efforts = ["low", "high"] }`), "", ""},
		"unlisted effort":         {single(`"medium"`, `{ efforts = ["low", "high"] }`), "/options/model/reasoning", "reasoning_capabilities"},
		"provider default":        {single(`"provider_default"`, `{ efforts = ["low"], mandatory = true, token_budget = false }`), "", ""},
		"none on mandatory":       {single(`"none"`, `{ mandatory = true }`), "/options/model/reasoning", "mandatory"},
		"none on optional":        {single(`"none"`, `{ mandatory = false }`), "", ""},
		"budget refused":          {single(`{ budget_tokens = 512 }`, `{ token_budget = false }`), "/options/model/reasoning", "token_budget"},
		"budget accepted":         {single(`{ budget_tokens = 512 }`, `{ token_budget = true }`), "", ""},
		"named unlisted effort":   {named(`"max"`, `{ efforts = ["low"] }`), "/options/models/m/model_options/reasoning", "capabilities/reasoning"},
		"named budget refused":    {named(`{ budget_tokens = 64 }`, `{ token_budget = false }`), "/options/models/m/model_options/reasoning", "token_budget"},
		"named fits":              {named(`"low"`, `{ efforts = ["low"], token_budget = false }`), "", ""},
		"budget at the allowance": {"schema_version = 1\n[options.limits]\nmax_output_tokens = 512\n[options.model]\nreasoning = { budget_tokens = 512 }\n", "/options/model/reasoning", "below the output allowance"},
		"budget below allowance":  {"schema_version = 1\n[options.limits]\nmax_output_tokens = 512\n[options.model]\nreasoning = { budget_tokens = 511 }\n", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadString(t, c.doc)
			if c.option == "" {
				if err != nil {
					t.Fatalf("should load: %v", err)
				}
				return
			}
			ce := wantCode(t, err, CodeInvalidValue, c.option)
			if !strings.Contains(ce.Message, c.says) {
				t.Fatalf("message %q does not say %q", ce.Message, c.says)
			}
		})
	}
	doc := single(`"low"`, `{ efforts = ["low"] }`) + "[deployment]\nallowed_run_overrides = [\"input\", \"model.reasoning\"]\n"
	_, err := loadString(t, doc, func(o *LoadOptions) { o.Overrides = []Override{{Target: "model.reasoning", Value: "high"}} })
	wantCode(t, err, CodeInvalidValue, "/options/model/reasoning")
}
