package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ContractRevision identifies the deployment contract this package
// implements: the reference's c3.26 schema plus the additions recorded in
// docs/differences.md.
const ContractRevision = "c3.26-go.1"

func (l *loader) resolve() (*Deployment, error) {
	entry := l.entryDoc
	deployment := map[string]any{"locked": false, "allowed_run_overrides": []any{"input"}}
	if d, ok := entry.tree["deployment"].(map[string]any); ok {
		nd, _ := normalize(deploymentSpec(), d, "/deployment", nil)
		for k, v := range nd.(map[string]any) {
			deployment[k] = v
		}
	}
	locked := deployment["locked"] == true || l.opts.Locked
	deployment["locked"] = locked
	if locked && len(l.bindings) == 0 {
		return nil, &Error{Code: CodeBinding, Binding: "workspace", Message: "a locked deployment needs an explicit workspace binding"}
	}
	prefs, err := l.preferenceLayers(locked, l.wd)
	if err != nil {
		return nil, err
	}
	l.insertLayers(prefs)

	// Profiles apply after the entry body, parents first.
	profile := l.opts.Profile
	if profile == "" {
		profile, _ = entry.tree["profile"].(string)
	}
	var profileLayers []map[string]any
	if profile != "" {
		order, err := l.expandProfile(profile)
		if err != nil {
			return nil, err
		}
		for _, name := range order {
			p := l.profiles[name]
			opts, _ := p["options"].(map[string]any)
			l.contribs = append(l.contribs, contribution{id: l.nextSource(), kind: "profile", locator: name, digest: sha256Tag(canonicalJSON(p)), options: opts})
			if al, ok := p["authority"].([]any); ok {
				for _, layer := range al {
					profileLayers = append(profileLayers, layer.(map[string]any))
				}
			}
		}
	}
	for _, pl := range profileLayers {
		l.layers = append(l.layers, pl)
		l.layerSrc = append(l.layerSrc, "profile:"+profile)
	}
	if len(l.layers) > maxLayers {
		return nil, &Error{Code: CodeLimit, Option: "/authority", Message: fmt.Sprintf("more than %d authority layers", maxLayers)}
	}

	if err := l.environment(); err != nil {
		return nil, err
	}

	spec := optionsSpec()
	mg := &merger{prov: provenance{}}
	var acc any = defaults(spec)
	mg.recordDefaults(spec, acc, "/options")
	for _, c := range l.contribs[1:] {
		if c.options != nil {
			acc = mg.merge(spec, acc, c.options, "/options", c.id)
		}
	}
	options := acc.(map[string]any)
	if err := l.overrides(options, deployment, mg, spec); err != nil {
		return nil, err
	}

	creds := l.creds
	layers := make([]any, len(l.layers))
	for i, layer := range l.layers {
		layers[i] = layer
	}
	tree := map[string]any{
		"authority":   layers,
		"credentials": creds,
		"deployment":  deployment,
		"options":     options,
	}
	d := &Deployment{tree: tree, bindings: l.bindings, configRoot: l.root, locked: locked, loopbackHTTP: l.opts.LoopbackHTTP && !locked, hostTrace: l.opts.HostTrace}
	complete(options)
	if err := d.decode(); err != nil {
		return nil, err
	}
	output, _ := options["output"].(map[string]any)
	_, hasSchema := output["schema"]
	if err := d.check(&view{o: &d.Options, hasSchema: hasSchema, prov: mg.prov}); err != nil {
		return nil, err
	}
	if err := d.inlineOutputSchema(l.ctx); err != nil {
		return nil, err
	}
	if err := d.build(); err != nil {
		return nil, err
	}
	if err := d.checkShellExamples(); err != nil {
		return nil, err
	}
	d.Fingerprint = sha256Tag(canonicalJSON(map[string]any{"schema_version": int64(1), "contract_revision": ContractRevision, "config": tree}))
	var sources []any
	for _, c := range l.contribs {
		src := Source{ID: c.id, Kind: c.kind, Locator: c.locator, Digest: c.digest}
		d.Sources = append(d.Sources, src)
		sources = append(sources, map[string]any{"id": src.ID, "kind": src.Kind, "locator": src.Locator, "digest": src.Digest})
	}
	d.InputFingerprint = sha256Tag(canonicalJSON(map[string]any{"schema_version": int64(1), "contract_revision": ContractRevision, "sources": sources}))
	d.Provenance = mg.prov
	return d, nil
}

func (mg *merger) recordDefaults(s *spec, v any, ptr string) {
	if m, ok := v.(map[string]any); ok && s.kind == sTable {
		for k, f := range s.fields {
			if child, ok := m[k]; ok {
				mg.recordDefaults(f, child, ptr+pointer(k))
			}
		}
		return
	}
	mg.record(ptr, "source-0000", "default")
}

// expandProfile returns the profile and its ancestors, parents first.
func (l *loader) expandProfile(name string) ([]string, error) {
	var order []string
	var visit func(n string, chain []string) error
	visit = func(n string, chain []string) error {
		if slices.Contains(chain, n) {
			return &Error{Code: CodeProfileCycle, Option: "/profiles" + pointer(n), Chain: append(chain, n), Message: "profiles extend each other in a cycle"}
		}
		if len(chain) >= maxProfileDepth {
			return &Error{Code: CodeLimit, Option: "/profiles" + pointer(n), Message: fmt.Sprintf("profile ancestry deeper than %d", maxProfileDepth)}
		}
		p, ok := l.profiles[n]
		if !ok {
			return &Error{Code: CodeUnknownProfile, Option: "/profile", Message: fmt.Sprintf("no profile named %q", shown(n, 64))}
		}
		if slices.Contains(order, n) {
			return &Error{Code: CodeDuplicateProfileAncestor, Option: "/profiles" + pointer(n), Chain: append(chain, n), Message: "a profile is reached twice through extends"}
		}
		ext, _ := p["extends"].([]any)
		for _, e := range ext {
			if err := visit(e.(string), append(chain, n)); err != nil {
				return err
			}
		}
		order = append(order, n)
		if len(order) > maxAncestors {
			return &Error{Code: CodeLimit, Option: "/profiles", Message: fmt.Sprintf("more than %d expanded ancestors", maxAncestors)}
		}
		return nil
	}
	if err := visit(name, nil); err != nil {
		return nil, err
	}
	return order, nil
}

// environment applies declared environment bindings as one contribution.
func (l *loader) environment() error {
	if len(l.envs) == 0 {
		return nil
	}
	spec := optionsSpec()
	contrib := map[string]any{}
	targets := map[string]string{}
	for _, name := range sortedKeys(l.envs) {
		e := l.envs[name].(map[string]any)
		target := e["option"].(string)
		if other, dup := targets[target]; dup {
			return &Error{Code: CodeConflict, Option: "/environment" + pointer(name), Message: fmt.Sprintf("%s and %s both bind option %s", other, name, target)}
		}
		targets[target] = name
		for _, c := range l.creds {
			for _, s := range c.(map[string]any)["sources"].([]any) {
				if sm := s.(map[string]any); sm["kind"] == "environment" && sm["name"] == name {
					return &Error{Code: CodeInvalidValue, Option: "/environment" + pointer(name), Message: "a credential source variable cannot also be an environment binding"}
				}
			}
		}
		var raw string
		var ok bool
		if l.opts.LookupEnv != nil {
			raw, ok = l.opts.LookupEnv(name)
		}
		if !ok {
			if e["required"] == true {
				return &Error{Code: CodeEnvironmentMissing, Option: "/environment" + pointer(name), Message: fmt.Sprintf("required environment variable %s is not set", name)}
			}
			continue
		}
		s, _ := lookup(spec, target)
		v, err := parseScalar(s, raw)
		if err != nil {
			return &Error{Code: CodeEnvironmentValue, Option: "/environment" + pointer(name), Message: fmt.Sprintf("%s does not hold a valid value for %s: %v", name, target, err)}
		}
		if _, cerr := normalize(s, v, "", nil); cerr != nil {
			return &Error{Code: CodeEnvironmentValue, Option: "/environment" + pointer(name), Message: fmt.Sprintf("%s does not hold a valid value for %s", name, target)}
		}
		setPath(contrib, target, v)
	}
	if len(contrib) > 0 {
		l.contribs = append(l.contribs, contribution{id: l.nextSource(), kind: "environment", locator: "environment", digest: sha256Tag(canonicalJSON(contrib)), options: contrib})
	}
	return nil
}

// parseScalar parses an environment string for a leaf spec. The value is
// never echoed in errors.
func parseScalar(s *spec, raw string) (any, error) {
	if len(raw) > maxStringBytes {
		return nil, fmt.Errorf("value too long")
	}
	switch s.kind {
	case sBool:
		switch raw {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("want true or false")
	case sInt:
		if !u64RE.MatchString(raw) {
			return nil, fmt.Errorf("want an unsigned decimal")
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("out of range")
		}
		return n, nil
	case sCount:
		if raw == "unlimited" {
			return raw, nil
		}
		if !u64RE.MatchString(raw) {
			return nil, fmt.Errorf("want an unsigned decimal or unlimited")
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("out of range")
		}
		return n, nil
	case sUnion:
		if raw == "unlimited" {
			return raw, nil
		}
		if !u64RE.MatchString(raw) {
			return nil, fmt.Errorf("want a positive decimal or unlimited")
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("out of range")
		}
		return n, nil
	}
	return raw, nil
}

func setPath(tree map[string]any, dotted string, v any) {
	parts := strings.Split(dotted, ".")
	cur := tree
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
}

// overrides applies typed per-run overrides, enforcing lock mode.
func (l *loader) overrides(options, deployment map[string]any, mg *merger, spec *spec) error {
	if len(l.opts.Overrides) == 0 {
		return nil
	}
	locked := deployment["locked"] == true
	allowed, _ := deployment["allowed_run_overrides"].([]any)
	contrib := map[string]any{}
	id := l.nextSource()
	for _, o := range l.opts.Overrides {
		ptr := "/options" + pointer(strings.Split(o.Target, ".")...)
		if !slices.Contains(overrideTargets, o.Target) && !slices.Contains(hostOnlyTargets, o.Target) {
			return &Error{Code: CodeOverrideForbidden, Option: ptr, Message: fmt.Sprintf("%q cannot be overridden per run", shown(o.Target, 64))}
		}
		if locked && o.Target == "policy" {
			return &Error{Code: CodeOverrideForbidden, Option: ptr, Message: "a locked deployment's policy is never replaced per run (--policy)"}
		}
		// Under lock a listed target may change within narrowing; an
		// unlisted switch or ceiling may still narrow (turn a tool off,
		// lower a limit) unless the entry says narrowing_run_overrides =
		// "listed". Nothing unlisted ever widens.
		listed := slices.Contains(allowed, any(o.Target))
		narrowOnly := deployment["narrowing_run_overrides"] != "listed" && slices.Contains(narrowingTargets, o.Target)
		if locked && !listed && !narrowOnly {
			why := "allowed_run_overrides"
			if slices.Contains(narrowingTargets, o.Target) {
				why += `; narrowing_run_overrides = "listed" admits no other narrowing`
			}
			return &Error{Code: CodeOverrideForbidden, Option: ptr, Message: fmt.Sprintf("the locked deployment does not allow overriding %s (%s)", o.Target, why)}
		}
		if o.Target == "input" {
			continue
		}
		if route, _ := options["model_route"].(string); route != "" && (o.Target == "model.provider" || o.Target == "model.id") {
			// A selected route chooses the models; a run's model would be
			// silently unused, so the two conflict, as in the reference.
			return &Error{Code: CodeConflict, Option: ptr, Message: fmt.Sprintf("options.model_route selects route %q, which chooses the model: a run cannot override %s (--provider and --model conflict with a route)", shown(route, 64), o.Target)}
		}
		s, ok := lookup(spec, o.Target)
		if !ok {
			return &Error{Code: CodeOverrideForbidden, Option: ptr, Message: "unknown override target"}
		}
		v := o.Value
		if n, isInt := v.(int); isInt {
			v = int64(n)
		}
		nv, err := normalize(s, v, ptr, nil)
		if err != nil {
			return err
		}
		if locked && !freeWhenListed(o.Target) {
			cur, _ := getPath(options, o.Target)
			if !narrows(o.Target, cur, nv) {
				return &Error{Code: CodeOverrideForbidden, Option: ptr, Message: fmt.Sprintf("under lock an override of %s may only narrow the current value", o.Target)}
			}
		}
		setPath(contrib, o.Target, nv)
	}
	if len(contrib) == 0 {
		return nil
	}
	l.contribs = append(l.contribs, contribution{id: id, kind: "override", locator: "host", digest: sha256Tag(canonicalJSON(contrib)), options: contrib})
	merged := mg.merge(spec, options, contrib, "/options", id).(map[string]any)
	for k := range options {
		delete(options, k)
	}
	for k, v := range merged {
		options[k] = v
	}
	return nil
}

// freeWhenListed reports whether a listed target takes any valid value
// under lock: the output format and the reasoning request change neither
// a tool, a destination nor a ceiling (each call stays within the limits),
// and the Skills a run activates come from the deployment's own roots,
// whose requirements are still checked against its authority (listing
// skills.activate is the operator's consent that a run chooses them).
func freeWhenListed(target string) bool {
	return target == "interfaces.cli_output" || target == "model.reasoning" || target == "skills.activate"
}

// narrows reports whether next is no more permissive than cur.
func narrows(target string, cur, next any) bool {
	if target == "model.prompt_caching" {
		// Caching grants nothing, but a locked deployment's run may only
		// turn its "auto" off, never on.
		return next == "provider_default" || next == cur
	}
	switch c := cur.(type) {
	case bool:
		n, ok := next.(bool)
		return ok && (n == c || (c && !n))
	case int64:
		n, ok := next.(int64)
		return ok && n <= c
	case string:
		if target == "output.schema" {
			return canonicalString(cur) == canonicalString(next)
		}
		if c == "unlimited" {
			return true
		}
		cn, err1 := strconv.ParseUint(c, 10, 64)
		switch n := next.(type) {
		case string:
			nn, err2 := strconv.ParseUint(n, 10, 64)
			return err1 == nil && err2 == nil && nn <= cn
		case int64:
			return err1 == nil && n >= 0 && uint64(n) <= cn
		}
		return false
	case nil:
		return false
	}
	return canonicalString(cur) == canonicalString(next)
}
