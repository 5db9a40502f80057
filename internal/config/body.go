package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/pabloagent/pablo/internal/suggest"
)

// body validates a file's top-level members and records its contributions.
// Every diagnostic names the file and, when the option is written, its line.
func (l *loader) body(doc *document, entry bool) error {
	rel, _ := filepath.Rel(l.root, filepath.Dir(doc.path))
	nc := &normCtx{dir: filepath.ToSlash(rel)}
	var opts map[string]any
	for _, key := range sortedKeys(doc.tree) {
		v, ptr := doc.tree[key], pointer(key)
		var err *Error
		switch key {
		case "schema_version", "imports":
		case "profile", "deployment":
			err = entryMember(key, v, ptr, entry, nc)
		case "options":
			var nv any
			if nv, err = normalize(optionsSpec(), v, ptr, nc); err == nil {
				opts = nv.(map[string]any)
			}
		case "credentials":
			err = l.credentials(doc, v, ptr, nc)
		case "environment":
			err = l.environmentBindings(doc, v, ptr, nc)
		case "profiles":
			err = l.profileDefinitions(doc, v, ptr, nc)
		case "authority":
			err = l.authorityLayers(doc, v, ptr, nc)
		case "requires":
			err = &Error{Code: CodeUnsupportedFeature, Option: ptr, Message: "requires is not supported in this release"}
		default:
			err = &Error{Code: CodeUnknownOption, Option: ptr, Message: fmt.Sprintf("unknown option %q%s", shown(key, 64), suggest.DidYouMean(key, topLevelKeys()))}
		}
		if err != nil {
			if err.Source == "" {
				err.Source = doc.name
			}
			if err.Line == 0 {
				err.Line = doc.line(err.Option)
			}
			return err
		}
	}
	sum := sha256.Sum256(doc.raw)
	l.contribs = append(l.contribs, contribution{id: l.nextSource(), kind: "file", locator: doc.name, digest: "sha256:" + hex.EncodeToString(sum[:]), options: opts})
	return nil
}

// entryMember checks profile and deployment, which only the entry file
// may write.
func entryMember(key string, v any, ptr string, entry bool, nc *normCtx) *Error {
	if !entry {
		return &Error{Code: CodeInvalidValue, Option: ptr, Message: key + " is allowed only in the entry file"}
	}
	if key == "profile" {
		if s, ok := v.(string); !ok || !nameRE.MatchString(s) {
			return &Error{Code: CodeInvalidValue, Option: ptr, Message: "profile is a profile name"}
		}
		return nil
	}
	_, err := normalize(deploymentSpec(), v, ptr, nc)
	return err
}

// credentials records a file's credential definitions.
func (l *loader) credentials(doc *document, v any, ptr string, nc *normCtx) *Error {
	m, err := normalize(mapOf(maxNamed, keyRE(nameRE, "credential name"), credentialSpec()), v, ptr, nc)
	if err != nil {
		return err
	}
	defs := m.(map[string]any)
	for _, name := range sortedKeys(defs) {
		c := normalizeCredential(defs[name].(map[string]any), nc)
		if err := l.define(l.creds, l.credSrc, name, c, doc, ptr+pointer(name), "credential"); err != nil {
			return err
		}
	}
	if len(l.creds) > maxNamed {
		return &Error{Code: CodeLimit, Option: ptr, Message: fmt.Sprintf("more than %d credentials", maxNamed)}
	}
	return nil
}

// environmentBindings records a file's environment bindings.
func (l *loader) environmentBindings(doc *document, v any, ptr string, nc *normCtx) *Error {
	m, err := normalize(mapOf(maxNamed, keyRE(envRE, "environment variable"), table(
		"option", enum(nil, environmentTargets...),
		"required", boolean(nil),
	)), v, ptr, nc)
	if err != nil {
		return err
	}
	defs := m.(map[string]any)
	for _, name := range sortedKeys(defs) {
		e := defs[name]
		if _, ok := e.(map[string]any)["option"]; !ok {
			return &Error{Code: CodeInvalidValue, Option: ptr + pointer(name), Message: "environment bindings need option"}
		}
		if err := l.define(l.envs, map[string]string{}, name, e, doc, ptr+pointer(name), "environment binding"); err != nil {
			return err
		}
	}
	if len(l.envs) > maxNamed {
		return &Error{Code: CodeLimit, Option: ptr, Message: fmt.Sprintf("more than %d environment bindings", maxNamed)}
	}
	return nil
}

// profileDefinitions records a file's profiles: a profile defined in two
// files must be defined the same way.
func (l *loader) profileDefinitions(doc *document, v any, ptr string, nc *normCtx) *Error {
	m, err := normalize(mapOf(maxProfiles, keyRE(nameRE, "profile name"), table(
		"extends", list(32, str(1, 64, nil).with(nameValue), nil),
		"options", optionsSpec(),
		"authority", list(maxLayers, authoritySpec(), nil),
	)), v, ptr, nc)
	if err != nil {
		return err
	}
	defs := m.(map[string]any)
	for _, name := range sortedKeys(defs) {
		pm := defs[name].(map[string]any)
		if bad := findOps(pm["authority"], ptr+pointer(name)+"/authority"); bad != "" {
			return &Error{Code: CodeInvalidValue, Option: bad, Message: "authority layers are never merged: write plain arrays and values"}
		}
		if ext, ok := pm["extends"].([]any); ok && hasDup(ext) {
			return &Error{Code: CodeDuplicateProfileAncestor, Option: ptr + pointer(name) + "/extends", Message: "extends names a profile twice"}
		}
		if old, ok := l.profiles[name]; ok {
			if canonicalString(old) != canonicalString(pm) {
				return &Error{Code: CodeConflict, Option: ptr + pointer(name), Message: fmt.Sprintf("profile %q is defined differently in %s", name, l.profSrc[name].name)}
			}
			continue
		}
		l.profiles[name], l.profSrc[name] = pm, doc
	}
	if len(l.profiles) > maxProfiles {
		return &Error{Code: CodeLimit, Option: ptr, Message: fmt.Sprintf("more than %d profiles", maxProfiles)}
	}
	return nil
}

// authorityLayers records a file's [[authority]] layers, which are never
// merged: each is written whole, with an id.
func (l *loader) authorityLayers(doc *document, v any, ptr string, nc *normCtx) *Error {
	m, err := normalize(list(maxLayers, authoritySpec(), nil), v, ptr, nc)
	if err != nil {
		return err
	}
	if bad := findOps(m, ptr); bad != "" {
		return &Error{Code: CodeInvalidValue, Option: bad, Message: "authority layers are never merged: write plain arrays and values"}
	}
	for i, layer := range m.([]any) {
		lm := layer.(map[string]any)
		if _, ok := lm["id"]; !ok {
			return &Error{Code: CodeInvalidValue, Option: ptr + "/" + strconv.Itoa(i), Message: "authority layers need an id"}
		}
		l.layers = append(l.layers, lm)
		l.layerSrc = append(l.layerSrc, doc.name)
	}
	return nil
}

func deploymentSpec() *spec {
	return table(
		"locked", boolean(false),
		"allowed_run_overrides", list(64, enum(nil, overrideTargets...), []any{"input"}).with(func(v any) error {
			if hasDup(v.([]any)) {
				return fmt.Errorf("allowed_run_overrides lists a name twice")
			}
			return nil
		}),
		// A Go addition: "any" (the default) lets a run narrow an
		// unlisted switch or ceiling under lock; "listed" admits only
		// allowed_run_overrides, as the reference does.
		"narrowing_run_overrides", enum(nil, "any", "listed"),
		// A Go addition: the name tools that show several deployments
		// (pablo inspect's stacks) give this one.
		"name", str(1, 64, nil).with(deploymentName),
	)
}

// deploymentName checks deployment.name: 1..64 bytes of [A-Za-z0-9_.-],
// so it reads the same in a URL, a page and a terminal.
func deploymentName(v any) error {
	for _, r := range v.(string) {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return fmt.Errorf("a deployment name is 1..64 bytes of [A-Za-z0-9_.-]")
		}
	}
	return nil
}

func hasDup(l []any) bool {
	seen := map[string]bool{}
	for _, e := range l {
		s := fmt.Sprint(e)
		if seen[s] {
			return true
		}
		seen[s] = true
	}
	return false
}

func normalizeCredential(c map[string]any, nc *normCtx) map[string]any {
	out := map[string]any{}
	for k, v := range c {
		out[k] = v
	}
	if s, ok := c["consumer"].(string); ok && s == "mcp.environment" {
		out["consumer"] = "mcp.env"
	}
	if srcs, ok := c["sources"].([]any); ok {
		ns := make([]any, len(srcs))
		for i, s := range srcs {
			m := s.(map[string]any)
			cp := map[string]any{}
			for k, v := range m {
				cp[k] = v
			}
			if p, ok := m["path"].(map[string]any); ok {
				cp["path"] = normalizePath(p, nc)
			}
			ns[i] = cp
		}
		out["sources"] = ns
	}
	return out
}

// define records an atomic named definition: identical ones coalesce,
// differing ones conflict.
func (l *loader) define(into map[string]any, src map[string]string, name string, v any, doc *document, ptr, what string) *Error {
	if old, ok := into[name]; ok {
		if canonicalString(old) != canonicalString(v) {
			return &Error{Code: CodeConflict, Option: ptr, Source: doc.name, Line: doc.line(ptr),
				Message: fmt.Sprintf("%s %q is defined differently elsewhere", what, name)}
		}
		return nil
	}
	into[name] = v
	src[name] = doc.name
	return nil
}

// findOps returns the pointer of the first list operation or unset marker
// in v, or "".
func findOps(v any, ptr string) string {
	switch x := v.(type) {
	case listOp, unsetValue:
		return ptr
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if p := findOps(x[k], ptr+pointer(k)); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := findOps(e, ptr+"/"+strconv.Itoa(i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// topLevelKeys are the keys a deployment file may hold at its top level, in
// the order a "did you mean" prefers them.
func topLevelKeys() []string {
	return []string{"schema_version", "imports", "profile", "deployment", "options", "credentials", "environment", "profiles", "authority", "requires"}
}
