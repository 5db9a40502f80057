package config

import (
	"fmt"
	"math"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/redact"
)

// spec describes the shape of one deployment value: what is accepted, how it
// merges and what it defaults to. The whole document is one spec tree, so
// strict decoding, merging, defaults and rendering share one definition.
type spec struct {
	kind   specKind
	fields map[string]*spec // table fields
	order  []string         // table fields in declaration order (for rendering)
	elem   *spec            // map value or list element
	key    func(string) error
	min    int64
	max    int64
	enum   []string
	check  func(v any) error
	// optional leaves also accept exactly {unset = true}.
	optional bool
	// listOps lists also accept {mode = "replace"|"append"|"prepend", items = [...]}.
	listOps bool
	// atomic values replace as a unit when documents compose.
	atomic bool
	// unsupported names a known feature this release does not implement.
	unsupported string
	// refused maps values of a known feature this release does not
	// implement to what it is (config_unsupported_feature).
	refused map[string]string
	def     any // default value (already normalized), nil for none
}

type specKind int

const (
	sBool specKind = iota
	sInt
	sString
	sEnum
	sPath
	sTable
	sMap
	sList
	sCount  // 0..4294967295 or "unlimited"
	sU64    // u64str or "unlimited"
	sUnion  // custom check decides
	sSchema // output schema: inline JSON string or Path
)

const maxSafeInt = 1<<53 - 1

func table(fields ...any) *spec {
	s := &spec{kind: sTable, fields: map[string]*spec{}}
	for i := 0; i < len(fields); i += 2 {
		name := fields[i].(string)
		s.fields[name] = fields[i+1].(*spec)
		s.order = append(s.order, name)
	}
	return s
}

func boolean(def any) *spec { return &spec{kind: sBool, def: def} }
func integer(min, max int64, def any) *spec {
	return &spec{kind: sInt, min: min, max: max, def: def}
}
func str(min, max int64, def any) *spec { return &spec{kind: sString, min: min, max: max, def: def} }
func enum(def any, values ...string) *spec {
	return &spec{kind: sEnum, enum: values, def: def}
}
func pathSpec(def any) *spec { return &spec{kind: sPath, def: def} }
func count(def any) *spec    { return &spec{kind: sCount, def: def} }
func u64(def any) *spec      { return &spec{kind: sU64, def: def} }
func mapOf(max int64, key func(string) error, elem *spec) *spec {
	return &spec{kind: sMap, max: max, key: key, elem: elem, def: map[string]any{}}
}
func list(max int64, elem *spec, def any) *spec {
	return &spec{kind: sList, max: max, elem: elem, def: def}
}
func (s *spec) opt() *spec                   { s.optional = true; return s }
func (s *spec) ops() *spec                   { s.listOps = true; return s }
func (s *spec) atom() *spec                  { s.atomic = true; return s }
func (s *spec) with(f func(any) error) *spec { s.check = f; return s }
func unsupported(owner string) *spec         { return &spec{kind: sUnion, unsupported: owner} }

// need makes a table require keys.
func (s *spec) need(keys ...string) *spec {
	prev := s.check
	s.check = func(v any) error {
		m, _ := v.(map[string]any)
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				return fmt.Errorf("%s is required here", k)
			}
		}
		if prev != nil {
			return prev(v)
		}
		return nil
	}
	return s
}

func keyRE(re pattern, what string) func(string) error {
	return func(k string) error {
		if !re.MatchString(k) {
			return fmt.Errorf("%s %q must match %s", what, k, re)
		}
		return nil
	}
}

// sandboxSpec is a sandbox table: options.shell.sandbox and an
// authority layer's shell.sandbox and mcp.sandbox (mode, filesystem,
// network), an MCP server's with read_paths too. No key has a static
// default: complete writes the defaults of the options' tables.
func sandboxSpec(readPaths bool) *spec {
	f := []any{
		"mode", enum(nil, "required", "off"),
		"filesystem", enum(nil, "no-fs", "read-only", "repo-write", "workspace-write"),
		"network", enum(nil, "deny", "repository-host-only", "allowlist", "unrestricted-with-approval", "allow"),
		// network = "allowlist": the hosts the egress proxy carries
		// HTTP and HTTPS to (internal/egress).
		"allow", list(64, str(1, 260, nil).with(allowEntry), nil).atom(),
	}
	if readPaths {
		f = append(f, "read_paths", list(32, pathSpec(nil), nil))
	}
	return table(f...).with(func(v any) error {
		m := v.(map[string]any)
		if _, ok := m["allow"]; ok && m["network"] != "allowlist" {
			return fmt.Errorf(`allow needs network = "allowlist" in the same table`)
		}
		return nil
	})
}

func allowEntry(v any) error {
	_, err := egress.ParseAllow([]string{v.(string)})
	return err
}

func rulesSpec() *spec {
	// approval = "required" (a Go extension, docs/approvals.md) makes a
	// call an allow rule allows ask first. "required" is the only value,
	// so no rule can lift a requirement another layer set.
	// roles (a Go extension, issue 37) are the roles a task must hold
	// for what an allow rule allows.
	rule := table("id", str(1, 64, nil).with(ruleID), "value", str(1, 4096, nil).with(noNUL), "approval", enum(nil, authority.ApprovalRequired),
		"roles", rolesSpec()).need("id", "value")
	return table(
		"default", enum(nil, "allow", "deny"),
		"allow", list(maxRulesPerDim, rule, nil).ops(),
		"deny", list(maxRulesPerDim, rule, nil).ops(),
	).with(func(v any) error {
		if err := needDefault(v); err != nil {
			return err
		}
		if ruleHas(v, "deny", "roles") {
			return fmt.Errorf("roles apply to allow rules only; a deny rule denies every role, so remove roles from it")
		}
		return noDenyApproval(v)
	})
}

// cwdRulesSpec is shell.cwd_roots: rules without approval, which
// belongs on what runs (a shell.commands rule, policy.tools for
// shell.run), not on the directory it runs in.
func cwdRulesSpec() *spec {
	s := rulesSpec()
	prev := s.check
	s.check = func(v any) error {
		if err := prev(v); err != nil {
			return err
		}
		if hasApproval(v, "allow") {
			return fmt.Errorf("approval is not taken on cwd_roots rules; put approval = \"required\" on a shell.commands allow rule, or on a policy.tools rule for shell.run")
		}
		return nil
	}
	return s
}

// noDenyApproval refuses approval on a deny rule: a denied call never
// runs, so there is nothing to approve.
func noDenyApproval(v any) error {
	if hasApproval(v, "deny") {
		return fmt.Errorf("approval applies to allow rules only; a deny rule's call never runs, so remove approval from it")
	}
	return nil
}

// skillPinKey is a pinned Skill's ROOT/NAME.
func skillPinKey(k string) error {
	root, name, ok := strings.Cut(k, "/")
	if !ok || !identRE.MatchString(root) || name == "" || len(name) > 64 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("a pinned Skill is ROOT/NAME, got %q", k)
	}
	return nil
}

// skillName is the NAME of a Skill the deployment gives (what: "an
// inline Skill"): 1 to 64 lowercase letters, digits and hyphens
// (discovery applies the rest of the name rules).
func skillName(what string) func(string) error {
	return func(k string) error {
		if k == "" || len(k) > 64 || strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Errorf("%s's name is 1 to 64 lowercase letters, digits and hyphens, got %q", what, k)
		}
		return nil
	}
}

// skillPackageSource is a package's source: exactly one of an archive
// (.tar.gz, .tgz or .zip, with its version) and a git ref.
func skillPackageSource(v any) error {
	m, _ := v.(map[string]any)
	archive, hasArchive := m["archive"].(map[string]any)
	_, hasGit := m["git"]
	switch {
	case hasArchive == hasGit:
		return fmt.Errorf("give exactly one of archive (a .tar.gz, .tgz or .zip file) and git (repo and ref)")
	case hasArchive:
		p, _ := archive["path"].(string)
		if l := strings.ToLower(p); !strings.HasSuffix(l, ".tar.gz") && !strings.HasSuffix(l, ".tgz") && !strings.HasSuffix(l, ".zip") {
			return fmt.Errorf("archive must name a .tar.gz, .tgz or .zip file, got %q", p)
		}
		if _, ok := m["version"]; !ok {
			return fmt.Errorf("version is required with an archive: the version the package's SKILL.md must declare")
		}
	}
	return nil
}

// skillPinDigest is a pin: sha256: and 64 lowercase hex digits.
func skillPinDigest(v any) error {
	d, _ := v.(string)
	if !strings.HasPrefix(d, "sha256:") || strings.Trim(d[7:], "0123456789abcdef") != "" || len(d) != 71 {
		return fmt.Errorf("a pin is sha256: and 64 lowercase hex digits")
	}
	return nil
}

// auditLevels are seed 002's audit levels (tracefile.AuditLevel).
func auditLevels() []string { return []string{"none", "metadata", "content"} }

// rolesSpec is a list of role names a task must hold (issue 37).
func rolesSpec() *spec {
	return list(16, str(1, 64, nil).with(roleValue), nil)
}

func roleValue(v any) error { return authority.ValidateRoles([]string{v.(string)}) }

// capabilityKey checks an options.required_roles key: a capability ID
// (a native or host tool, an MCP tool, a Skill).
func capabilityKey(k string) error {
	if authority.ID(k).Kind() == authority.KindInvalid {
		return fmt.Errorf("%q is not a capability ID (a tool such as shell.run, an MCP tool mcp/SERVER/TOOL, or a Skill team/name)", k)
	}
	return nil
}

// hasApproval reports whether a rule set's list key (allow or deny), as
// written or through a list operation, holds a rule with approval.
func hasApproval(v any, key string) bool { return ruleHas(v, key, "approval") }

// ruleHas reports whether a rule set's list key (allow or deny), as
// written or through a list operation, holds a rule with field.
func ruleHas(v any, key, field string) bool {
	m, _ := v.(map[string]any)
	var rules []any
	switch l := m[key].(type) {
	case []any:
		rules = l
	case map[string]any:
		rules, _ = l["items"].([]any)
	}
	for _, r := range rules {
		if rm, ok := r.(map[string]any); ok {
			if _, has := rm[field]; has {
				return true
			}
		}
	}
	return false
}

func needDefault(v any) error {
	if _, ok := v.(map[string]any)["default"]; !ok {
		return fmt.Errorf("rule sets need default = \"allow\" or \"deny\"")
	}
	return nil
}

func commandRulesSpec() *spec {
	rule := table(
		"id", str(1, 64, nil).with(ruleID),
		"executable", str(1, 4096, nil).with(absolute),
		"args", list(256, str(0, 8192, nil), []any{}),
		"match", enum(nil, "exact", "prefix"),
		// A Go extension: a command this allow rule allows asks first.
		"approval", enum(nil, authority.ApprovalRequired),
		"examples", table(
			"match", list(32, str(1, 65536, nil), nil),
			"not_match", list(32, str(1, 65536, nil), nil),
		),
	).need("id", "executable", "match")
	return table(
		"default", enum(nil, "allow", "deny"),
		"allow", list(maxRulesPerDim, rule, []any{}),
		"deny", list(maxRulesPerDim, rule, []any{}),
	).atom().with(func(v any) error {
		if err := needDefault(v); err != nil {
			return err
		}
		return noDenyApproval(v)
	})
}

func limitsSpec(withDefaults bool) *spec {
	d := func(v any) any {
		if withDefaults {
			return v
		}
		return nil
	}
	return table(
		"max_model_calls", count(d("unlimited")),
		"max_tool_calls", count(d("unlimited")),
		"max_total_tokens", u64(d("unlimited")),
		"max_cost_microusd", u64(d("unlimited")),
		"max_run_duration_ms", integer(1, 86_400_000, d(int64(3_600_000))),
		"max_tool_duration_ms", integer(1, 86_400_000, d(int64(900_000))),
		"max_tool_input_bytes", integer(1, maxSafeInt, d(int64(1_048_576))),
		"max_tool_output_bytes", integer(1024, maxSafeInt, d(int64(8_388_608))),
		"max_context_bytes", integer(1, maxSafeInt, d(int64(33_554_432))),
		"max_input_bytes", integer(1, maxSafeInt, d(int64(1_048_576))),
		"max_output_bytes", integer(1, maxSafeInt, d(int64(4_194_304))),
		"max_output_tokens", integer(1, math.MaxUint32, d(int64(65_536))),
		"max_events", u64(d("1000000")).with(minEvents),
		"filesystem", table(
			"max_file_bytes", positiveOrUnlimited(d("unlimited")),
			"max_entries", positiveOrUnlimited(d("unlimited")),
			"max_depth", positiveOrUnlimited(d("unlimited")),
			"max_scan_bytes", positiveOrUnlimited(d("unlimited")),
		),
	)
}

func positiveOrUnlimited(def any) *spec {
	return &spec{kind: sUnion, def: def, check: func(v any) error {
		switch x := v.(type) {
		case string:
			if x == "unlimited" {
				return nil
			}
		case int64:
			if x >= 1 && x <= maxSafeInt {
				return nil
			}
		}
		return fmt.Errorf("want a positive integer or \"unlimited\"")
	}}
}

func reasoningSpec() *spec {
	efforts := []string{"provider_default", "none", "minimal", "low", "medium", "high", "xhigh", "max"}
	return &spec{kind: sUnion, check: func(v any) error {
		switch x := v.(type) {
		case string:
			if slices.Contains(efforts, x) {
				return nil
			}
			return fmt.Errorf("reasoning effort %q is not one of %s", x, strings.Join(efforts, ", "))
		case map[string]any:
			if len(x) != 1 {
				return fmt.Errorf("reasoning table takes exactly budget_tokens")
			}
			b, ok := x["budget_tokens"].(int64)
			if !ok || b < 1 || b > math.MaxUint32 {
				return fmt.Errorf("budget_tokens must be an integer 1..4294967295")
			}
			return nil
		}
		return fmt.Errorf("want an effort string or { budget_tokens = N }")
	}}
}

func modelFields(top bool) []any {
	providers := []string{"vercel", "openrouter", "open_responses", "openai_compatible", "anthropic", "openai", "gemini", "script"}
	var providerDef, credDef any
	if top {
		providerDef, credDef = "vercel", "gateway"
	}
	f := []any{
		"provider", enum(providerDef, providers...),
		"id", str(1, 256, nil).with(noSpace),
		"endpoint", str(1, 4096, nil).with(httpURL),
		"credential", str(1, 64, credDef).with(nameValue),
		"capability_profile", enum(nil, "open-responses-text-tools-v1"),
		"auth_header", str(1, 128, nil).with(authHeader),
		"auth_scheme", enum(nil, "bearer", "raw"),
		"context_window_tokens", integer(1, 1_000_000_000, nil).opt(),
		"script", pathSpec(nil),
		// A Go addition: how long a call waits for the provider's next
		// byte; unset means providers.DefaultStreamIdleTimeout (5 min).
		"stream_idle_timeout_ms", integer(1, 86_400_000, nil),
		// A Go addition (issue 31): whether the adapter marks the
		// stable prefix for caching (anthropic cache_control).
		"prompt_caching", enum(nil, "provider_default", "auto"),
		// A Go addition (issue 31): the model's prices in micro-USD per
		// million tokens, from which each call's cost is computed.
		"pricing", table(
			"input", integer(0, math.MaxUint32, nil),
			"output", integer(0, math.MaxUint32, nil),
			"cache_read", integer(0, math.MaxUint32, nil),
			"cache_write", integer(0, math.MaxUint32, nil),
		),
	}
	if top {
		f = append(f,
			// A Go addition: retries of a failed model call on the same
			// entry, with exponential backoff (providers.RetryPolicy).
			"retry", table(
				"max_attempts", integer(0, 10, nil),
				"initial_backoff_ms", integer(0, 600_000, nil),
				"max_backoff_ms", integer(0, 600_000, nil),
			),
			"reasoning", reasoningSpec(),
			"reasoning_capabilities", table(
				"efforts", list(7, enum(nil, "none", "minimal", "low", "medium", "high", "xhigh", "max"), nil),
				"mandatory", boolean(nil),
				"token_budget", boolean(nil),
			),
		)
	} else {
		f = append(f,
			"model_options", table(
				"max_output_tokens", integer(1, math.MaxUint32, nil),
				"reasoning", reasoningSpec(),
			),
			"capabilities", table(
				"text_streaming", boolean(nil),
				"tool_calls", boolean(nil),
				"reasoning", table(
					"efforts", list(7, enum(nil, "none", "minimal", "low", "medium", "high", "xhigh", "max"), nil),
					"mandatory", boolean(nil),
					"token_budget", boolean(nil),
				),
			),
		)
	}
	return f
}

// optionsSpec returns the options spec. It is built once per process and
// never modified afterwards: every load shares it read-only.
var optionsSpec = sync.OnceValue(func() *spec {
	s := optionsTables()
	markListOps(s)
	return s
})

// markListOps lets every ordered option list take {mode, items}, except
// inside atomic values, which replace as a unit.
func markListOps(s *spec) {
	if s.atomic {
		return
	}
	switch s.kind {
	case sList:
		s.listOps = true
	case sTable:
		for _, f := range s.fields {
			markListOps(f)
		}
	case sMap:
		markListOps(s.elem)
	}
}

func optionsTables() *spec {
	workspaceDef := map[string]any{"base": "binding", "name": "workspace", "path": "."}
	route := table(
		"entries", list(32, &spec{kind: sUnion, check: routeEntry}, nil),
		"max_attempts", integer(1, 32, nil),
		"per_attempt_timeout_ms", integer(1, 86_400_000, nil),
		"eligible_errors", list(4, enum(nil, "not_sent", "rate_limited", "service_unavailable", "transport_uncertain"), nil),
		"retry_uncertain_delivery", boolean(nil),
		"retry_owner", enum(nil, "pablo"),
		"sticky", &spec{kind: sUnion, check: func(v any) error {
			if v != true {
				return fmt.Errorf("sticky must be true")
			}
			return nil
		}},
		"required_capabilities", list(3, enum(nil, "text_streaming", "tool_calls", "structured_output"), nil),
		"router", table(
			"provider", enum(nil, "vercel"),
			"model", enum(nil, "typesafe-ai/jev"),
			"credential", str(1, 64, nil).with(nameValue),
			"instructions", str(1, 8192, nil),
			"timeout_ms", integer(1, 60_000, nil),
			"categories", mapOf(10, keyRE(nameRE, "category"), table(
				"description", str(1, 4096, nil),
				"model", str(1, 64, nil).with(nameValue),
			).need("description", "model")),
		),
	)
	mcpServer := table(
		"transport", enum(nil, "stdio", "http"),
		"command", str(1, 4096, nil).with(absolute),
		"args", list(64, str(0, 4096, nil), nil),
		"cwd", pathSpec(nil),
		"env", mapOf(32, keyRE(envRE, "environment name"), str(1, 64, nil).with(credValue)),
		"url", str(1, 4096, nil).with(httpURL),
		"headers", mapOf(16, headerName, str(1, 64, nil).with(credValue)),
		// A Go extension: OAuth 2.1 for a Streamable HTTP server, per the
		// MCP authorization specification. Secrets are credential names.
		"oauth", table(
			"grant", enum("authorization_code", "authorization_code", "client_credentials", "identity_assertion"),
			"client_id", str(1, 512, nil),
			"client_secret", str(1, 64, nil).with(credValue),
			"private_key", str(1, 64, nil).with(credValue),
			"client_metadata_url", str(1, 4096, nil).with(httpURL),
			"scopes", list(32, str(1, 256, nil), nil),
			"id_token", str(1, 64, nil).with(credValue),
			"identity_provider", str(1, 4096, nil).with(httpURL),
			"identity_client_id", str(1, 512, nil),
		),
		"required", boolean(nil),
		"startup_timeout_ms", integer(1000, 120_000, nil),
		"operation_timeout_ms", integer(1000, 900_000, nil),
		"pins", mapOf(64, keyRE(toolRE, "tool name"), str(71, 71, nil).with(digestValue)),
		// A Go extension: the bubblewrap sandbox of a stdio server.
		"sandbox", sandboxSpec(true),
		// A Go extension (issue 37): the roles a task must hold to use
		// any tool of the server.
		"roles", rolesSpec(),
	).atom()
	return table(
		"run", table(
			"workspace", pathSpec(workspaceDef).with(notWorkspaceBase),
			"instructions", str(0, maxInstructions, nil),
		),
		"model", table(modelFields(true)...),
		"models", mapOf(maxNamed, keyRE(nameRE, "model name"), table(modelFields(false)...)),
		"routes", mapOf(maxNamed, keyRE(nameRE, "route name"), route),
		"model_route", str(1, 64, nil).with(nameValue),
		"context", table(
			"enabled", boolean(true),
			"safety_margin_percent", integer(1, 50, int64(10)),
			"max_summary_tokens", integer(16, 65536, int64(1024)),
			"max_summary_bytes", integer(256, 1_048_576, int64(16384)),
			"keep_recent_turns", integer(0, 32, int64(0)),
		),
		"limits", limitsSpec(true),
		"shell", table(
			"enabled", boolean(true),
			"commands", commandRulesSpec(),
			"environment", table(
				"values", mapOf(32, keyRE(taskEnv, "PABLO_TASK_ variable"), str(0, 8192, nil)),
				"allowed_names", list(32, str(12, 128, nil).with(taskEnvValue), nil),
			),
			"cwd_roots", cwdRulesSpec(),
			// A Go extension: the bubblewrap sandbox of every command.
			"sandbox", sandboxSpec(false),
		),
		"filesystem", table(
			"enabled", boolean(true),
			"write", boolean(false),
			// A Go extension (seed 002's filesystem scope): where
			// fs.write and fs.edit may write; absent is the workspace.
			"scope", enum(nil, "workspace-write", "repo-write"),
		),
		"policy", table(
			"tools", rulesSpec(),
			"executables", rulesSpec(),
			"read_roots", rulesSpec(),
			"write_roots", rulesSpec(),
		),
		"output", table(
			"schema", &spec{kind: sSchema, optional: true},
			"max_validation_work", integer(1, 1_000_000_000, int64(16_777_216)),
			"repair", table(
				"enabled", boolean(false),
				"max_feedback_bytes", integer(512, 4096, int64(4096)),
			),
		),
		"skills", table(
			"roots", mapOf(16, keyRE(identRE, "skills root"), pathSpec(nil)),
			"activate", list(8, str(1, 128, nil), []any{}),
			// A Go extension (issue 37): seed 002's package pinned by
			// digest, by ROOT/NAME; a package that differs is refused.
			"pins", mapOf(8, skillPinKey, str(71, 71, nil).with(skillPinDigest)),
			// A Go extension (issue 37): a Skill given in the deployment,
			// admitted as inline/NAME and read through the same strict
			// frontmatter walk as a SKILL.md (skills.Inline).
			"inline", mapOf(16, skillName("an inline Skill"), table(
				"description", str(1, 1024, nil),
				"instructions", str(1, 256<<10, nil),
				"license", str(1, 256, nil),
				"compatibility", str(1, 500, nil),
				"allowed_tools", list(64, str(1, 256, nil), nil),
				"owner", str(1, 256, nil),
				"version", str(1, 64, nil),
				"task_kinds", list(16, str(1, 64, nil), nil),
				"compatible_adapters", list(16, str(1, 64, nil), nil),
				"credentials", list(16, str(1, 64, nil), nil),
			).need("description", "instructions")),
			// A Go extension (issue 37): a single file holding what a
			// SKILL.md holds, named explicitly, admitted as file/NAME.
			"files", mapOf(16, skillName("a single-file Skill"), pathSpec(nil)),
			// A Go extension (issue 37): a package from a versioned
			// archive or a git ref, pinned by digest, admitted as
			// package/NAME (skills.Package).
			"packages", mapOf(8, skillName("a package Skill"), table(
				"archive", pathSpec(nil),
				"git", table(
					"repo", pathSpec(nil),
					"ref", str(1, 256, nil),
					"subdir", str(1, 1024, nil),
				).need("repo", "ref"),
				"version", str(1, 64, nil),
				"digest", str(71, 71, nil).with(skillPinDigest),
			).with(skillPackageSource).need("digest")),
		),
		"mcp", table(
			"servers", mapOf(16, keyRE(identRE, "MCP server name"), mcpServer),
			"policies", list(16, table(
				"servers", rulesSpec(),
				"tools", rulesSpec(),
				"launchers", rulesSpec(),
			), []any{}),
		),
		"children", table("enabled", boolean(false)),
		"a2a", table(
			"remotes", mapOf(16, keyRE(remoteRE, "remote name"), table(
				"card_url", str(1, 4096, nil).with(httpURL),
				"endpoint", str(1, 4096, nil).with(httpURL),
				"trace_context", boolean(nil),
				"bearer", table(
					"scheme", str(1, 128, nil),
					"credential", str(1, 128, nil).with(credValue),
				).need("scheme", "credential"),
			).atom()),
		),
		"interfaces", table(
			"cli_output", enum("text", "text", "json"),
			"tui", unsupported("the terminal UI"),
			// A Go extension: the reference reserves interfaces.acp and
			// refuses it. max_sessions bounds the ACP sessions whose
			// prompts run at once (absent: the session handler's default);
			// client_mcp_servers admits the MCP servers an editor passes
			// on session/new and session/load (absent: refused), each run
			// in client_mcp_sandbox; workspace_roots are the directories a
			// session's cwd may be in (absent: the bound workspace alone).
			"acp", table(
				"max_sessions", integer(1, 64, nil),
				"client_mcp_servers", boolean(nil),
				"client_mcp_sandbox", sandboxSpec(true),
				"workspace_roots", list(16, pathSpec(nil), nil),
			),
		),
		"trace", table(
			"path", pathSpec(nil).opt(),
			"capture_content", boolean(false),
			"max_bytes", integer(1, maxSafeInt, int64(268_435_456)),
		),
		// A Go extension: suspected-secret patterns beyond the built-in
		// credential formats, masked wherever known secrets are.
		// A Go extension (docs/approvals.md): a tool class whose every
		// allowed call needs approval. "required" is the only value: a
		// class default only adds a question, and no layer removes one.
		// A Go extension (issue 30): a model's mistakes go back to it as
		// tool results, within a bound, instead of ending the task.
		"tools", table(
			"max_recoverable_errors", integer(0, 100, nil),
			"on_denial", enum(nil, "stop", "report"),
		),
		// A Go extension (issue 33): what a resumed task does with a call
		// whose outcome is unknown.
		"resume", table(
			"unknown", enum(nil, "report", "ask", "fail"),
		),
		// A Go extension (issue 37): the roles a task must hold to use a
		// capability (a tool, a memory tool, a Skill), by capability ID.
		"required_roles", mapOf(64, capabilityKey, rolesSpec()),
		// A Go extension (issue 37): seed 002's audit level, none,
		// metadata or content, of the tool profile and per capability.
		"audit", table(
			"level", enum(nil, auditLevels()...),
			"capabilities", mapOf(64, capabilityKey, enum(nil, auditLevels()...)),
		),
		"approvals", table(
			"shell", enum(nil, "required"),
			"filesystem_write", enum(nil, "required"),
			"mcp", enum(nil, "required"),
			"subagent", enum(nil, "required"),
		),
		// A Go extension (seed 002's memory tools): the memory repository,
		// its ref, where records and docs live, the ontology, and one grant
		// per tool. It replaces as a unit when documents compose.
		"memory", memorySpec(),
		"redaction", table(
			"patterns", list(maxRedactionPatterns, str(1, redact.MaxExprBytes, nil).with(redactionPattern), nil),
		),
		"otel", table(
			"exporter", enum("none", "none", "otlp"),
			"sdk_disabled", boolean(false),
			"endpoint", str(1, 4096, "http://localhost:4318/v1/traces").with(otelURL),
			"protocol", enum("http/protobuf", "http/protobuf"),
			"headers", str(1, 64, nil).with(nameValue).opt(),
			"compression", enum("none", "none", "gzip"),
			"timeout_ms", integer(1, 86_400_000, int64(10_000)),
			"service_name", str(1, 256, "pablo"),
			"resource_attributes", mapOf(64, lenKey(1, 256), str(0, 4096, nil)),
			"sampler", enum("parentbased_always_on", "parentbased_always_on", "always_on", "always_off", "traceidratio", "parentbased_always_off", "parentbased_traceidratio"),
			"sampler_arg", str(1, 19, "1").with(func(v any) error {
				if !ratioRE.MatchString(v.(string)) {
					return fmt.Errorf("sampler_arg must be a decimal 0..1")
				}
				return nil
			}),
			"propagators", list(1, enum(nil, "tracecontext"), []any{"tracecontext"}),
			"max_queue_size", integer(1, maxSafeInt, int64(2048)),
			"max_export_batch_size", integer(1, maxSafeInt, int64(512)),
			"schedule_delay_ms", integer(1, 86_400_000, int64(5000)),
			"export_timeout_ms", integer(1, 86_400_000, int64(30_000)),
		),
		"diagnostics", unsupported("diagnostics options"),
		"compatibility", unsupported("compatibility options"),
	)
}

func authoritySpec() *spec {
	return table(
		"id", str(1, 64, nil).with(ruleID),
		"workspace_roots", list(64, pathSpec(nil), nil),
		"tool_names", list(128, str(1, 256, nil), nil),
		"model_ids", list(64, str(1, 256, nil), nil),
		"provider_endpoints", list(64, str(1, 4096, nil).with(httpURL), nil),
		"credential_ids", list(64, str(1, 64, nil).with(credValue), nil),
		"otel_endpoints", list(64, str(1, 4096, nil).with(otelURL), nil),
		"capture_content", boolean(nil),
		"limits", limitsSpec(false),
		"policy", table(
			"tools", rulesSpec(),
			"executables", rulesSpec(),
			"read_roots", rulesSpec(),
			"write_roots", rulesSpec(),
		),
		"shell", table(
			"commands", commandRulesSpec(),
			"environment", table("allowed_names", list(32, str(12, 128, nil).with(taskEnvValue), nil)),
			"cwd_roots", cwdRulesSpec(),
			"sandbox", sandboxSpec(false),
		),
		"mcp", table(
			"servers", rulesSpec(),
			"tools", rulesSpec(),
			"launchers", rulesSpec(),
			"sandbox", sandboxSpec(false),
		),
		"skill_roots", list(16, pathSpec(nil), nil),
		"a2a_remotes", mapOf(16, keyRE(remoteRE, "remote name"), table(
			"card_url", str(1, 4096, nil).with(httpURL),
			"endpoint", str(1, 4096, nil).with(httpURL),
			// A Go extension (docs/approvals.md): every spawn_remote to
			// this remote asks the task's approver.
			"approval", enum(nil, "required"),
			// A Go extension (issue 37): the roles a task must hold to
			// delegate to this remote.
			"roles", rolesSpec(),
		).need("card_url", "endpoint")),
	)
}

func credentialSpec() *spec {
	return table(
		"consumer", &spec{kind: sUnion, check: func(v any) error {
			s, ok := v.(string)
			if _, known := authority.ParseConsumer(s); !ok || !known {
				return fmt.Errorf("consumer must be one of provider.vercel, provider.openrouter, provider.open_responses, provider.openai_compatible, otel.headers, mcp.env (or mcp.environment), mcp.headers, a2a.bearer, ledger.store")
			}
			return nil
		}},
		"sources", list(8, &spec{kind: sUnion, check: credentialSource}, nil).with(func(v any) error {
			if len(v.([]any)) == 0 {
				return fmt.Errorf("a credential needs 1..8 sources")
			}
			return nil
		}),
	).need("consumer", "sources")
}

var overrideTargets = []string{
	"input", "run.workspace", "shell.enabled", "filesystem.enabled", "filesystem.write",
	"trace.capture_content", "interfaces.cli_output", "limits.max_model_calls", "limits.max_tool_calls",
	"limits.max_total_tokens", "limits.max_cost_microusd", "limits.max_run_duration_ms",
	"limits.max_tool_duration_ms", "limits.max_tool_input_bytes", "limits.max_context_bytes",
	"limits.max_input_bytes", "limits.max_output_bytes", "limits.max_tool_output_bytes",
	"limits.max_output_tokens", "limits.max_events", "limits.filesystem.max_file_bytes",
	"limits.filesystem.max_entries", "limits.filesystem.max_depth", "limits.filesystem.max_scan_bytes",
	"output.schema", "output.max_validation_work", "output.repair.enabled",
	"output.repair.max_feedback_bytes", "skills.activate", "model.reasoning", "model.prompt_caching",
}

// hostOnlyTargets may be overridden by the host but are never in
// allowed_run_overrides: under lock they are refused (policy before its
// file is read).
var hostOnlyTargets = []string{"model.provider", "model.id", "trace.path", "policy"}

// narrowingTargets are the switches and ceilings whose override can only
// take authority away when it narrows: under lock such an override is
// accepted without being listed, unless the entry says
// narrowing_run_overrides = "listed".
var narrowingTargets = []string{
	"shell.enabled", "filesystem.enabled", "filesystem.write", "trace.capture_content",
	"limits.max_model_calls", "limits.max_tool_calls", "limits.max_total_tokens", "limits.max_cost_microusd",
	"limits.max_run_duration_ms", "limits.max_tool_duration_ms", "limits.max_tool_input_bytes",
	"limits.max_context_bytes", "limits.max_input_bytes", "limits.max_output_bytes",
	"limits.max_tool_output_bytes", "limits.max_output_tokens", "limits.max_events",
	"limits.filesystem.max_file_bytes", "limits.filesystem.max_entries", "limits.filesystem.max_depth",
	"limits.filesystem.max_scan_bytes", "output.max_validation_work", "output.repair.enabled",
	"output.repair.max_feedback_bytes",
}

var environmentTargets = []string{
	"model.provider", "model.id", "shell.enabled", "filesystem.enabled", "filesystem.write",
	"interfaces.cli_output", "trace.capture_content",
	"limits.max_model_calls", "limits.max_tool_calls", "limits.max_total_tokens", "limits.max_cost_microusd",
	"limits.max_run_duration_ms", "limits.max_tool_duration_ms", "limits.max_tool_input_bytes",
	"limits.max_context_bytes", "limits.max_input_bytes", "limits.max_output_bytes",
	"limits.max_tool_output_bytes", "limits.max_output_tokens", "limits.max_events",
	"limits.filesystem.max_file_bytes", "limits.filesystem.max_entries", "limits.filesystem.max_depth",
	"limits.filesystem.max_scan_bytes", "otel.exporter", "otel.sdk_disabled", "otel.protocol",
	"otel.compression", "otel.timeout_ms", "otel.service_name", "otel.sampler", "otel.sampler_arg",
	"otel.max_queue_size", "otel.max_export_batch_size", "otel.schedule_delay_ms", "otel.export_timeout_ms",
}

// --- leaf checks ---

func ruleID(v any) error {
	if !authority.ValidRuleID(v.(string)) {
		return fmt.Errorf("rule IDs are 1..64 bytes of [A-Za-z0-9_.-] and may not start with \"builtin.\"")
	}
	return nil
}

func noNUL(v any) error {
	if strings.IndexByte(v.(string), 0) >= 0 {
		return fmt.Errorf("NUL is not allowed")
	}
	return nil
}

func noSpace(v any) error {
	for _, r := range v.(string) {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("whitespace and control characters are not allowed")
		}
	}
	return nil
}

func absolute(v any) error {
	s := v.(string)
	if !strings.HasPrefix(s, "/") {
		return fmt.Errorf("must be an absolute path, got %q (no PATH lookup is done)", shown(s, 80))
	}
	if strings.IndexByte(s, 0) >= 0 || path.Clean(s) != s {
		return fmt.Errorf("must be a clean absolute path without NUL, \"..\" or \"//\"")
	}
	return nil
}

// maxRedactionPatterns bounds options.redaction.patterns: each pattern is
// tried on every text the runtime records.
const maxRedactionPatterns = 32

// redactionPattern checks one options.redaction.patterns entry: a Go RE2
// expression whose matches are bounded (see redact.NewPattern).
func redactionPattern(v any) error {
	_, err := redact.NewPattern("options.redaction.patterns", v.(string))
	return err
}

func nameValue(v any) error {
	if !nameRE.MatchString(v.(string)) {
		return fmt.Errorf("names match %s", nameRE)
	}
	return nil
}

func credValue(v any) error {
	if !credRE.MatchString(v.(string)) {
		return fmt.Errorf("this value is a credential name ([A-Za-z0-9_.-], 1..64), never a literal secret")
	}
	return nil
}

func digestValue(v any) error {
	s := v.(string)
	if !strings.HasPrefix(s, "sha256:") || len(s) != 71 || strings.Trim(s[7:], "0123456789abcdef") != "" {
		return fmt.Errorf("pins are \"sha256:\" followed by 64 lowercase hex digits")
	}
	return nil
}

func taskEnvValue(v any) error {
	if !taskEnv.MatchString(v.(string)) {
		return fmt.Errorf("names match %s", taskEnv)
	}
	return nil
}

func minEvents(v any) error {
	if s, ok := v.(string); ok && s != "unlimited" {
		n, _ := strconv.ParseUint(s, 10, 64)
		if n < 4 {
			return fmt.Errorf("max_events must be at least 4 (lifecycle and terminal events count)")
		}
	}
	return nil
}

func headerName(k string) error {
	if !headerRE.MatchString(k) || strings.HasPrefix(k, "mcp-") {
		return fmt.Errorf("header %q must be lowercase [a-z0-9-], at most 64 bytes, and not start with mcp-", shown(k, 80))
	}
	switch k {
	case "host", "content-length", "content-type", "accept", "connection", "transfer-encoding", "upgrade",
		"traceparent", "tracestate", "baggage", "authorization-mcp":
		return fmt.Errorf("header %q is a protocol or routing header and cannot be configured", k)
	}
	return nil
}

func lenKey(min, max int) func(string) error {
	return func(k string) error {
		if len(k) < min || len(k) > max {
			return fmt.Errorf("key length must be %d..%d bytes", min, max)
		}
		return nil
	}
}

func authHeader(v any) error {
	h := v.(string)
	lower := strings.ToLower(h)
	if lower == "authorization" {
		return nil
	}
	if strings.HasPrefix(lower, "x-forwarded-") || !strings.HasPrefix(lower, "x-") {
		return fmt.Errorf("auth_header must be Authorization or an X-* header ending in -api-key, -auth-key, -auth-token, -access-token or -authorization")
	}
	for _, suffix := range []string{"-api-key", "-auth-key", "-auth-token", "-access-token", "-authorization"} {
		if strings.HasSuffix(lower, suffix) {
			for _, c := range []byte(h) {
				if !(c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
					return fmt.Errorf("auth_header must be an HTTP token")
				}
			}
			return nil
		}
	}
	return fmt.Errorf("auth_header must be Authorization or an X-* header ending in -api-key, -auth-key, -auth-token, -access-token or -authorization")
}

// httpURL checks the shape of a remote URL: absolute http(s), a host, no
// userinfo, query or fragment. Whether plain http is acceptable is decided
// later (only a loopback host fixture, never under lock).
func httpURL(v any) error {
	s := v.(string)
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%q is not an absolute URL", shown(s, 120))
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("URL scheme must be https")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("URL must not carry userinfo, a query or a fragment")
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("URL must not contain whitespace or control characters")
		}
	}
	return nil
}

func otelURL(v any) error {
	if !otelRE.MatchString(v.(string)) {
		return fmt.Errorf("endpoint must be a complete http(s) traces URL without userinfo, query or fragment")
	}
	return httpURL(v)
}

func routeEntry(v any) error {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return fmt.Errorf("a route entry is { model = \"name\" } or { route = \"name\" }")
	}
	for k, val := range m {
		s, ok := val.(string)
		if (k != "model" && k != "route") || !ok || !nameRE.MatchString(s) {
			return fmt.Errorf("a route entry is { model = \"name\" } or { route = \"name\" }")
		}
	}
	return nil
}

func credentialSource(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("a source is a table with kind")
	}
	kind, _ := m["kind"].(string)
	allowed := map[string]bool{"kind": true}
	switch kind {
	case "environment":
		allowed["name"] = true
		name, _ := m["name"].(string)
		if !envRE.MatchString(name) {
			return fmt.Errorf("environment sources need name matching %s", envRE)
		}
	case "host":
		allowed["name"] = true
		name, _ := m["name"].(string)
		if !nameRE.MatchString(name) {
			return fmt.Errorf("host sources need a name matching %s", nameRE)
		}
	case "file":
		allowed["path"], allowed["encoding"], allowed["key"] = true, true, true
		enc, _ := m["encoding"].(string)
		switch enc {
		case "utf8":
			if _, has := m["key"]; has {
				return fmt.Errorf("key is only for encoding = \"dotenv\"")
			}
		case "dotenv":
			key, _ := m["key"].(string)
			if !envRE.MatchString(key) {
				return fmt.Errorf("dotenv sources need key matching %s", envRE)
			}
		default:
			return fmt.Errorf("file sources need encoding = \"utf8\" or \"dotenv\"")
		}
		if err := checkPathObject(m["path"]); err != nil {
			return err
		}
	default:
		return fmt.Errorf("source kind must be environment, file or host")
	}
	for k := range m {
		if !allowed[k] {
			return fmt.Errorf("unknown source key %q", shown(k, 40))
		}
	}
	return nil
}

func notWorkspaceBase(v any) error {
	if m, ok := v.(map[string]any); ok && m["base"] == "workspace" {
		return fmt.Errorf("run.workspace cannot be relative to the workspace")
	}
	return nil
}

// checkPathObject validates a typed path object's shape.
func checkPathObject(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("paths are typed objects such as { base = \"binding\", name = \"workspace\", path = \".\" }, never strings")
	}
	base, _ := m["base"].(string)
	for k := range m {
		switch k {
		case "base", "path":
		case "name":
			if base != "binding" {
				return fmt.Errorf("name is only allowed with base = \"binding\"")
			}
		default:
			return fmt.Errorf("unknown path key %q", shown(k, 40))
		}
	}
	switch base {
	case "source", "config", "workspace":
	case "binding":
		name, _ := m["name"].(string)
		if !nameRE.MatchString(name) {
			return fmt.Errorf("binding paths need a name matching %s", nameRE)
		}
	default:
		return fmt.Errorf("path base must be source, config, workspace or binding")
	}
	p, ok := m["path"].(string)
	if !ok {
		return fmt.Errorf("path objects need a path string")
	}
	return checkRelPath(p)
}

// checkRelPath enforces: nonempty, relative, ≤4096 bytes, no NUL, valid
// UTF-8, and no ".." left after normalization.
func checkRelPath(p string) error {
	if p == "" || len(p) > maxPathBytes {
		return fmt.Errorf("path must be 1..%d bytes", maxPathBytes)
	}
	if !utf8.ValidString(p) || strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("path must be UTF-8 without NUL")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return fmt.Errorf("path %q must be relative (no leading / or backslash)", shown(p, 80))
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("path %q escapes its base", shown(p, 80))
	}
	return nil
}
