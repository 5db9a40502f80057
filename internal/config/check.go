package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/endpoint"
)

// The fixed gateway endpoints of the reference's providers.
const (
	VercelEndpoint     = "https://ai-gateway.vercel.sh/v1/chat/completions"
	OpenRouterEndpoint = "https://openrouter.ai/api/v1/chat/completions"
)

// credUse is one place configuration names a credential.
type credUse struct {
	ptr, name   string
	consumer    authority.Consumer
	destination string
	explicit    bool
}

func (d *Deployment) options() map[string]any { return d.tree["options"].(map[string]any) }

func get(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// check runs the cross-field rules over the resolved tree.
func (d *Deployment) check(prov provenance) error {
	o := d.options()
	bad := func(code Code, ptr, format string, args ...any) error {
		return &Error{Code: code, Option: ptr, Message: fmt.Sprintf(format, args...)}
	}
	explicit := func(ptr string) bool {
		for _, origin := range prov[ptr] {
			if origin.Operation != "default" {
				return true
			}
		}
		return false
	}
	if get(o, "filesystem", "write") == true && get(o, "filesystem", "enabled") == false {
		return bad(CodeInvalidValue, "/options/filesystem/write", "filesystem.write = true needs filesystem.enabled = true")
	}
	if get(o, "trace", "capture_content") == true && get(o, "trace", "path") == nil && !d.hostTrace {
		return bad(CodeInvalidValue, "/options/trace/capture_content", "capture_content needs a trace.path destination")
	}
	if get(o, "output", "repair", "enabled") == true && get(o, "output", "schema") == nil {
		return bad(CodeInvalidValue, "/options/output/repair/enabled", "output repair needs output.schema")
	}
	if tp, ok := get(o, "trace", "path").(map[string]any); ok {
		if err := checkTemplate(tp["path"].(string), true); err != nil {
			return bad(CodeInvalidValue, "/options/trace/path/path", "%v", err)
		}
	}

	var uses []credUse
	// Models in use: the single model, or every model a selected route
	// reaches. Every declared model is checked for shape either way.
	inUse, err := d.modelsInUse()
	if err != nil {
		return err
	}
	if _, route := o["model_route"]; !route {
		m := asMap(o["model"])
		if err := d.checkModel("/options/model", m, true); err != nil {
			return err
		}
		if u, ok := modelCredential("/options/model", m, explicit("/options/model/credential")); ok {
			uses = append(uses, u)
		}
	}
	for _, name := range sortedKeys(asMap(o["models"])) {
		ptr := "/options/models" + pointer(name)
		m := asMap(asMap(o["models"])[name])
		for _, req := range []string{"provider", "id", "credential"} {
			if _, ok := m[req]; !ok && !(req == "credential" && m["provider"] == "script") {
				return bad(CodeInvalidValue, ptr, "named models need %s", req)
			}
		}
		if err := d.checkModel(ptr, m, false); err != nil {
			return err
		}
		if slices.Contains(inUse, name) {
			if u, ok := modelCredential(ptr, m, true); ok {
				uses = append(uses, u)
			}
		}
	}
	for _, name := range sortedKeys(asMap(o["routes"])) {
		r := asMap(asMap(o["routes"])[name])
		if router := asMap(r["router"]); router != nil {
			ptr := "/options/routes" + pointer(name) + "/router"
			for _, req := range []string{"provider", "model", "credential", "instructions", "timeout_ms", "categories"} {
				if _, ok := router[req]; !ok {
					return bad(CodeInvalidValue, ptr, "the router needs %s", req)
				}
			}
			cats := asMap(router["categories"])
			if len(cats) < 2 {
				return bad(CodeInvalidValue, ptr+"/categories", "a router needs 2..10 categories")
			}
			for cn, c := range cats {
				if _, ok := asMap(o["models"])[asMap(c)["model"].(string)]; !ok {
					return bad(CodeInvalidValue, ptr+"/categories"+pointer(cn)+"/model", "no model named %q", asMap(c)["model"])
				}
			}
			uses = append(uses, credUse{ptr: ptr + "/credential", name: router["credential"].(string), consumer: authority.ConsumerVercel, destination: "https://ai-gateway.vercel.sh/v4/ai/evaluation-model", explicit: true})
		}
	}

	// MCP servers.
	for _, name := range sortedKeys(asMap(get(o, "mcp", "servers"))) {
		ptr := "/options/mcp/servers" + pointer(name)
		s := asMap(asMap(get(o, "mcp", "servers"))[name])
		switch s["transport"] {
		case "stdio":
			if _, ok := s["command"]; !ok {
				return bad(CodeInvalidValue, ptr+"/command", "MCP server %q: stdio servers need an absolute command", name)
			}
			for _, k := range []string{"url", "headers"} {
				if _, ok := s[k]; ok {
					return bad(CodeInvalidValue, ptr+pointer(k), "MCP server %q: %s is only for transport = \"http\"", name, k)
				}
			}
			for _, v := range sortedKeys(asMap(s["env"])) {
				uses = append(uses, credUse{ptr: ptr + "/env" + pointer(v), name: asMap(s["env"])[v].(string), consumer: authority.ConsumerMCPEnv, destination: "mcp:" + name + ":env:" + v, explicit: true})
			}
		case "http":
			u, ok := s["url"].(string)
			if !ok {
				return bad(CodeInvalidValue, ptr+"/url", "MCP server %q: http servers need url", name)
			}
			for _, k := range []string{"command", "args", "cwd", "env"} {
				if _, ok := s[k]; ok {
					return bad(CodeInvalidValue, ptr+pointer(k), "MCP server %q: %s is only for transport = \"stdio\"", name, k)
				}
			}
			if err := d.checkRemote(ptr+"/url", u); err != nil {
				return err
			}
			for _, h := range sortedKeys(asMap(s["headers"])) {
				uses = append(uses, credUse{ptr: ptr + "/headers" + pointer(h), name: asMap(s["headers"])[h].(string), consumer: authority.ConsumerMCPHeaders, destination: "mcp:" + name + ":header:" + h, explicit: true})
			}
		default:
			return bad(CodeInvalidValue, ptr+"/transport", "MCP server %q needs transport = \"stdio\" or \"http\"", name)
		}
		if _, ok := s["required"]; !ok {
			s["required"] = true
		}
		if _, ok := s["startup_timeout_ms"]; !ok {
			s["startup_timeout_ms"] = int64(30000)
		}
		if _, ok := s["operation_timeout_ms"]; !ok {
			s["operation_timeout_ms"] = int64(60000)
		}
		if s["transport"] == "stdio" {
			if _, ok := s["cwd"]; !ok {
				s["cwd"] = map[string]any{"base": "workspace", "path": "."}
			}
		}
	}
	for _, name := range sortedKeys(asMap(get(o, "a2a", "remotes"))) {
		ptr := "/options/a2a/remotes" + pointer(name)
		r := asMap(asMap(get(o, "a2a", "remotes"))[name])
		for _, k := range []string{"card_url", "endpoint"} {
			u, ok := r[k].(string)
			if !ok {
				return bad(CodeInvalidValue, ptr+pointer(k), "remote %q needs %s", name, k)
			}
			if err := d.checkRemote(ptr+pointer(k), u); err != nil {
				return err
			}
		}
		if b := asMap(r["bearer"]); b != nil {
			if _, ok := b["scheme"]; !ok {
				return bad(CodeInvalidValue, ptr+"/bearer/scheme", "bearer needs scheme and credential")
			}
			c, ok := b["credential"].(string)
			if !ok {
				return bad(CodeInvalidValue, ptr+"/bearer/credential", "bearer needs scheme and credential")
			}
			uses = append(uses, credUse{ptr: ptr + "/bearer/credential", name: c, consumer: authority.ConsumerA2ABearer, destination: r["endpoint"].(string), explicit: true})
		}
	}
	if get(o, "otel", "exporter") == "otlp" {
		if err := checkOTLPEndpoint(get(o, "otel", "endpoint").(string)); err != nil {
			return err
		}
	}
	if h, ok := get(o, "otel", "headers").(string); ok {
		uses = append(uses, credUse{ptr: "/options/otel/headers", name: h, consumer: authority.ConsumerOTelHeaders, destination: get(o, "otel", "endpoint").(string), explicit: true})
	}
	if get(o, "otel", "max_export_batch_size").(int64) > get(o, "otel", "max_queue_size").(int64) {
		return bad(CodeInvalidValue, "/options/otel/max_export_batch_size", "the export batch cannot exceed the queue size")
	}

	if err := d.checkCredentials(uses); err != nil {
		return err
	}
	if err := d.checkRuleIDs(); err != nil {
		return err
	}
	return d.checkAuthority(inUse)
}

// checkTemplate allows "{session_id}" only where templates are allowed.
func checkTemplate(p string, allowed bool) error {
	rest := p
	for {
		i := indexByte(rest, '{')
		if i < 0 {
			break
		}
		if !allowed || len(rest) < i+12 || rest[i:i+12] != "{session_id}" {
			return fmt.Errorf("the only template is the literal {session_id}")
		}
		rest = rest[i+12:]
	}
	if indexByte(rest, '}') >= 0 {
		return fmt.Errorf("the only template is the literal {session_id}")
	}
	return nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func modelCredential(ptr string, m map[string]any, explicit bool) (credUse, bool) {
	provider, _ := m["provider"].(string)
	var consumer authority.Consumer
	dest, _ := m["endpoint"].(string)
	switch provider {
	case "vercel":
		consumer, dest = authority.ConsumerVercel, VercelEndpoint
	case "openrouter":
		consumer, dest = authority.ConsumerOpenRouter, OpenRouterEndpoint
	case "open_responses":
		consumer = authority.ConsumerOpenResponses
	case "openai_compatible":
		consumer = authority.ConsumerOpenAICompatible
	default:
		return credUse{}, false
	}
	name, ok := m["credential"].(string)
	if !ok {
		return credUse{}, false
	}
	return credUse{ptr: ptr + "/credential", name: name, consumer: consumer, destination: dest, explicit: explicit}, true
}

// checkModel applies the provider rules to one model profile.
func (d *Deployment) checkModel(ptr string, m map[string]any, top bool) error {
	bad := func(sub, format string, args ...any) error {
		return &Error{Code: CodeInvalidValue, Option: ptr + sub, Message: fmt.Sprintf(format, args...)}
	}
	provider, _ := m["provider"].(string)
	endpoint, hasEndpoint := m["endpoint"].(string)
	_, hasAuthHeader := m["auth_header"]
	_, hasAuthScheme := m["auth_scheme"]
	_, hasProfile := m["capability_profile"]
	_, hasScript := m["script"]
	if hasScript && provider != "script" {
		return bad("/script", "script is only for provider = \"script\"")
	}
	switch provider {
	case "vercel", "openrouter":
		fixed := VercelEndpoint
		if provider == "openrouter" {
			fixed = OpenRouterEndpoint
		}
		if hasEndpoint && endpoint != fixed {
			return bad("/endpoint", "the %s endpoint is fixed (%s); use provider = \"openai_compatible\" for another base URL", provider, fixed)
		}
		if hasAuthHeader || hasAuthScheme || hasProfile {
			return bad("", "auth_header, auth_scheme and capability_profile are only for open_responses and openai_compatible")
		}
		if _, ok := m["id"]; !ok && top {
			id := "zai/glm-5.3-flash"
			if provider == "openrouter" {
				id = "z-ai/glm-5.3-flash"
			}
			m["id"] = id
		}
	case "open_responses":
		if !hasEndpoint {
			return bad("/endpoint", "open_responses needs an explicit HTTPS endpoint")
		}
		if !hasProfile {
			return bad("/capability_profile", "open_responses needs capability_profile = \"open-responses-text-tools-v1\"")
		}
		if _, ok := m["id"]; !ok {
			return bad("/id", "open_responses needs an explicit model id")
		}
	case "openai_compatible":
		if !hasEndpoint {
			return bad("/endpoint", "openai_compatible needs endpoint, the Chat Completions URL")
		}
		if hasProfile {
			return bad("/capability_profile", "capability_profile is only for open_responses")
		}
		if _, ok := m["id"]; !ok {
			return bad("/id", "openai_compatible needs an explicit model id")
		}
	case "script":
		if !hasScript {
			return bad("/script", "the script provider needs script, a path to a script file")
		}
		if hasEndpoint || hasAuthHeader || hasAuthScheme || hasProfile {
			return bad("", "the script provider takes no endpoint or auth settings")
		}
		if _, ok := m["id"]; !ok {
			m["id"] = "script"
		}
	}
	if hasEndpoint {
		if err := d.checkRemote(ptr+"/endpoint", endpoint); err != nil {
			return err
		}
	}
	return nil
}

// checkRemote requires https, except a loopback host fixture when the host
// asked for one and the deployment is not locked.
func (d *Deployment) checkRemote(ptr, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &Error{Code: CodeInvalidValue, Option: ptr, Message: "not a URL"}
	}
	if endpoint.CheckScheme(u, d.loopbackHTTP) == nil {
		return nil
	}
	msg := endpoint.ErrPlainHTTP.Error()
	if isLoopback(u) {
		msg += " (plain http to loopback is only a host fixture, never under lock)"
	}
	return &Error{Code: CodeInvalidValue, Option: ptr, Message: msg}
}

// checkOTLPEndpoint requires https for the OTLP exporter except to a
// loopback host (a collector on this host, as the reference's default
// http://localhost:4318 is). Unlike a model or MCP endpoint, no host switch
// is needed for that and lock does not forbid it: the spans and the
// otel.headers credential never leave the host over plain HTTP.
func checkOTLPEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &Error{Code: CodeInvalidValue, Option: "/options/otel/endpoint", Message: "not a URL"}
	}
	if endpoint.CheckScheme(u, true) != nil {
		return &Error{Code: CodeInvalidValue, Option: "/options/otel/endpoint", Message: "the OTLP endpoint must use https; plain http is allowed only to a loopback host (localhost, 127.0.0.1, ::1)"}
	}
	return nil
}

// modelsInUse expands the selected route into model names and checks the
// route graph.
func (d *Deployment) modelsInUse() ([]string, error) {
	o := d.options()
	routes := asMap(o["routes"])
	models := asMap(o["models"])
	for _, name := range sortedKeys(routes) {
		r := asMap(routes[name])
		if _, ok := r["entries"]; !ok {
			return nil, &Error{Code: CodeInvalidValue, Option: "/options/routes" + pointer(name) + "/entries", Message: "routes need 1..32 entries"}
		}
		flat, err := expandRoute(name, routes, models, nil)
		if err != nil {
			return nil, err
		}
		if ma, ok := r["max_attempts"].(int64); ok && int(ma) > len(flat) {
			return nil, &Error{Code: CodeInvalidValue, Option: "/options/routes" + pointer(name) + "/max_attempts", Message: fmt.Sprintf("max_attempts %d exceeds the %d flattened entries", ma, len(flat))}
		}
	}
	sel, ok := o["model_route"].(string)
	if !ok {
		return nil, nil
	}
	if _, exists := routes[sel]; !exists {
		return nil, &Error{Code: CodeInvalidValue, Option: "/options/model_route", Message: fmt.Sprintf("no route named %q", sel)}
	}
	return expandRoute(sel, routes, models, nil)
}

func expandRoute(name string, routes, models map[string]any, chain []string) ([]string, error) {
	ptr := "/options/routes" + pointer(name)
	if slices.Contains(chain, name) {
		return nil, &Error{Code: CodeInvalidValue, Option: ptr, Chain: append(chain, name), Message: "routes refer to each other in a cycle"}
	}
	if len(chain) >= 16 {
		return nil, &Error{Code: CodeLimit, Option: ptr, Message: "routes nest deeper than 16 levels"}
	}
	r, ok := routes[name].(map[string]any)
	if !ok {
		return nil, &Error{Code: CodeInvalidValue, Option: ptr, Message: fmt.Sprintf("no route named %q", name)}
	}
	var out []string
	seenRoutes := map[string]bool{}
	entries, _ := r["entries"].([]any)
	if len(entries) == 0 {
		return nil, &Error{Code: CodeInvalidValue, Option: ptr + "/entries", Message: "routes need 1..32 entries"}
	}
	for i, e := range entries {
		em := e.(map[string]any)
		eptr := ptr + "/entries/" + strconv.Itoa(i)
		if m, ok := em["model"].(string); ok {
			if _, exists := models[m]; !exists {
				return nil, &Error{Code: CodeInvalidValue, Option: eptr, Message: fmt.Sprintf("no model named %q", m)}
			}
			out = append(out, m)
			continue
		}
		sub := em["route"].(string)
		if seenRoutes[sub] {
			return nil, &Error{Code: CodeInvalidValue, Option: eptr, Message: fmt.Sprintf("route %q is repeated", sub)}
		}
		seenRoutes[sub] = true
		flat, err := expandRoute(sub, routes, models, append(chain, name))
		if err != nil {
			return nil, err
		}
		out = append(out, flat...)
	}
	for i, m := range out {
		if slices.Contains(out[:i], m) {
			return nil, &Error{Code: CodeInvalidValue, Option: ptr + "/entries", Message: fmt.Sprintf("model %q appears twice after expansion", m)}
		}
	}
	if len(out) > 32 {
		return nil, &Error{Code: CodeLimit, Option: ptr + "/entries", Message: "more than 32 entries after expansion"}
	}
	return out, nil
}

// checkCredentials resolves references to records and records each
// credential's exact destinations.
func (d *Deployment) checkCredentials(uses []credUse) error {
	creds := asMap(d.tree["credentials"])
	d.credentials = map[string]CredentialRef{}
	dests := map[string][]string{}
	for _, u := range uses {
		c, ok := creds[u.name].(map[string]any)
		if !ok {
			if !u.explicit {
				continue // a default reference: credential_unavailable at run time
			}
			return &Error{Code: CodeInvalidValue, Option: u.ptr, Message: fmt.Sprintf("no credential named %q", u.name)}
		}
		if authority.Consumer(c["consumer"].(string)) != u.consumer {
			return &Error{Code: CodeInvalidValue, Option: u.ptr, Message: fmt.Sprintf("credential %q is for consumer %s, not %s", u.name, c["consumer"], u.consumer)}
		}
		if !slices.Contains(dests[u.name], u.destination) {
			dests[u.name] = append(dests[u.name], u.destination)
		}
	}
	for _, name := range sortedKeys(creds) {
		raw, _ := json.Marshal(creds[name])
		var ref CredentialRef
		if err := json.Unmarshal(raw, &ref); err != nil {
			return &Error{Code: CodeInvalidValue, Option: "/credentials" + pointer(name), Message: "malformed credential"}
		}
		d.credentials[name] = ref
	}
	d.credDests = dests
	return nil
}

// Resolver returns a credential resolver for this deployment: each record
// bound to exactly the destinations configuration gives it.
func (d *Deployment) Resolver(opts authority.ResolverOptions) (*authority.Resolver, error) {
	for _, name := range sortedKeys(asMap(d.tree["credentials"])) {
		ref := d.credentials[name]
		c := authority.Credential{Name: name, Consumer: ref.Consumer, Destinations: d.credDests[name]}
		for _, s := range ref.Sources {
			src := authority.Source{Kind: authority.SourceKind(s.Kind), Name: s.Name, Encoding: s.Encoding, Key: s.Key}
			if s.Path != nil {
				p, err := d.ResolvePath(*s.Path)
				if err != nil {
					return nil, err
				}
				src.Path = p
			}
			c.Sources = append(c.Sources, src)
		}
		opts.Credentials = append(opts.Credentials, c)
	}
	return authority.NewResolver(opts), nil
}

// inlineOutputSchema pins a file-backed output schema as inline text so the
// fingerprint covers its bytes.
func (d *Deployment) inlineOutputSchema(ctx context.Context) error {
	out := asMap(d.options()["output"])
	p, ok := out["schema"].(map[string]any)
	if !ok {
		return nil
	}
	ref := PathRef{Base: p["base"].(string), Path: p["path"].(string)}
	if n, ok := p["name"].(string); ok {
		ref.Name = n
	}
	if ref.Base == "workspace" {
		return &Error{Code: CodeInvalidValue, Option: "/options/output/schema", Message: "an output schema file cannot be relative to the workspace"}
	}
	real, err := d.ResolvePath(ref)
	if err != nil {
		return &Error{Code: CodeInvalidValue, Option: "/options/output/schema", Message: err.Error()}
	}
	raw, err := readBounded(ctx, real, maxStringBytes)
	if err != nil {
		if os.IsNotExist(err) {
			return &Error{Code: CodeInvalidValue, Option: "/options/output/schema", Message: "the schema file does not exist"}
		}
		if ce := (*Error)(nil); errors.As(err, &ce) && ce.cause != nil {
			// Not a regular file, or the read was cancelled.
			return &Error{Code: CodeInvalidValue, Option: "/options/output/schema", Message: "the schema file: " + ce.Message, cause: ce.cause}
		}
		return &Error{Code: CodeInvalidValue, Option: "/options/output/schema", Message: "the schema file cannot be read within 65536 bytes"}
	}
	out["schema"] = string(raw)
	return nil
}
