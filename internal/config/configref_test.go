package config

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// docs/configuration.md is generated from the deployment schema (the spec
// tree this package decodes with): every key with its type, default,
// range, whether a run may override it under lock and whether it is a Go
// extension. What each key does is keyDocs' text. The test fails when the
// schema gains, loses or changes a key the document does not show, or a
// key has no text; PABLO_UPDATE_DOCS=1 rewrites the document.

const configDocPath = "../../docs/configuration.md"

// docKey is one key of the reference.
type docKey struct {
	key  string
	spec *spec
}

// schemaKeys walks the deployment document's schema in declaration order.
func schemaKeys() []docKey {
	var out []docKey
	var walk func(prefix string, s *spec)
	walk = func(prefix string, s *spec) {
		switch {
		case s.kind == sTable && len(s.order) > 0:
			for _, k := range s.order {
				walk(prefix+"."+k, s.fields[k])
			}
			return
		case s.kind == sMap && s.elem.kind == sTable:
			out = append(out, docKey{prefix, s})
			walk(prefix+".NAME", s.elem)
			return
		case s.kind == sList && s.elem.kind == sTable:
			out = append(out, docKey{prefix, s})
			walk(prefix+"[]", s.elem)
			return
		}
		out = append(out, docKey{prefix, s})
	}
	out = append(out, docKey{"schema_version", &spec{kind: sInt, min: 1, max: 1}}, docKey{"imports", list(maxImportsPerFile, str(1, maxPathBytes, nil), nil)}, docKey{"profile", str(1, 64, nil)})
	walk("deployment", deploymentSpec())
	walk("options", optionsSpec())
	walk("credentials.NAME", credentialSpec())
	walk("environment.NAME", table("option", enum(nil, environmentTargets...), "required", boolean(nil)))
	walk("profiles.NAME", table("extends", list(32, str(1, 64, nil), nil)))
	out = append(out, docKey{"profiles.NAME.options", table()}, docKey{"profiles.NAME.authority", list(maxLayers, table(), nil)})
	walk("authority[]", authoritySpec())
	return out
}

// typeOf is a key's type as the document shows it.
func typeOf(s *spec) string {
	switch s.kind {
	case sBool:
		return "boolean"
	case sInt:
		return "integer"
	case sString:
		return "string"
	case sEnum:
		return "string (enum)"
	case sPath:
		return "path object"
	case sTable:
		return "table"
	case sMap:
		if s.elem.kind == sTable {
			return "table of tables"
		}
		return "table of " + plural(typeOf(s.elem))
	case sList:
		if s.elem.kind == sTable {
			return "array of tables"
		}
		return "array of " + plural(typeOf(s.elem))
	case sCount:
		return `integer or "unlimited"`
	case sU64:
		return `decimal string or "unlimited"`
	case sSchema:
		return "JSON string or path object"
	}
	return "see text"
}

// plural is a type's plural: "strings", "strings (enum)".
func plural(t string) string {
	if t == "see text" {
		return "values (see text)"
	}
	if base, rest, ok := strings.Cut(t, " ("); ok {
		return plural(base) + " (" + rest
	}
	if strings.HasPrefix(t, "array of ") {
		return "arrays of " + strings.TrimPrefix(t, "array of ")
	}
	return t + "s"
}

// rangeOf is a key's accepted values.
func rangeOf(s *spec) string {
	switch s.kind {
	case sInt:
		return fmt.Sprintf("%d..%d", s.min, s.max)
	case sString:
		if s.max > 0 {
			return fmt.Sprintf("%d..%d bytes", s.min, s.max)
		}
	case sEnum:
		q := make([]string, len(s.enum))
		for i, e := range s.enum {
			q[i] = "`" + e + "`"
		}
		return strings.Join(q, ", ")
	case sCount:
		return `0..4294967295, "unlimited"`
	case sU64:
		return `0..2^64-1, "unlimited"`
	case sMap, sList:
		r := fmt.Sprintf("at most %d entries", s.max)
		if s.elem.kind == sEnum {
			r += " of " + rangeOf(s.elem)
		}
		return r
	}
	return ""
}

// defaultOf is a key's built-in default.
func defaultOf(s *spec) string {
	if s.def == nil {
		return ""
	}
	b, _ := json.Marshal(s.def)
	return "`" + string(b) + "`"
}

// overrideOf says whether and how a run may override a key.
func overrideOf(key string) string {
	target, ok := strings.CutPrefix(key, "options.")
	switch {
	case !ok:
		return ""
	case slices.Contains(narrowingTargets, target):
		return "narrow (under lock: lower or off only, listed or not)"
	case slices.Contains(overrideTargets, target):
		return "if listed in `allowed_run_overrides`"
	case slices.Contains(hostOnlyTargets, target):
		return "unlocked only"
	}
	return ""
}

// goExtensions are the keys (and key prefixes, ending in ".") the
// reference's schema does not have.
var goExtensions = []string{
	"options.model.stream_idle_timeout_ms", "options.model.prompt_caching", "options.model.pricing.", "options.model.retry.",
	"options.models.NAME.stream_idle_timeout_ms", "options.models.NAME.prompt_caching", "options.models.NAME.pricing.",
	"options.model.script", "options.models.NAME.script",
	"options.mcp.servers.NAME.oauth.", "options.mcp.servers.NAME.sandbox.", "options.shell.sandbox.",
	"options.interfaces.acp.", "options.redaction.", "options.tools.", "options.approvals.", "options.memory.",
	"options.filesystem.scope", "options.resume.", "options.mcp.servers.NAME.pins", "options.skills.inline", "options.skills.files", "options.skills.packages",
	"deployment.narrowing_run_overrides", "deployment.name", "authority[].shell.sandbox.", "authority[].mcp.sandbox.",
	"authority[].a2a_remotes.NAME.approval",
	"options.required_roles", "options.audit.level", "options.audit.capabilities", "options.mcp.servers.NAME.roles", "authority[].a2a_remotes.NAME.roles",
}

func isGoExtension(key string) bool {
	for _, e := range goExtensions {
		if key == e || strings.HasSuffix(e, ".") && strings.HasPrefix(key, e) {
			return true
		}
	}
	return strings.HasSuffix(key, "[].approval") || strings.HasSuffix(key, "[].roles") || strings.Contains(key, ".examples.")
}

// describe finds a key's text: its own, or the text of the shape it
// shares (a named model is options.model's, an authority field the
// option it bounds, a rule list every rule list's).
func describeKey(key string) (string, bool) {
	if d, ok := keyDocs[key]; ok {
		return d, true
	}
	if rest, ok := strings.CutPrefix(key, "options.models.NAME."); ok {
		if d, ok := keyDocs["options.model."+rest]; ok {
			return d, true
		}
	}
	if rest, ok := strings.CutPrefix(key, "authority[]."); ok {
		for _, base := range []string{"options.", "options.mcp.policies[]."} {
			if d, ok := describeKey(base + rest); ok {
				return "Ceiling: " + strings.ToLower(d[:1]) + d[1:], true
			}
		}
	}
	if i := strings.LastIndex(key, "sandbox."); i >= 0 {
		if d, ok := keyDocs["*."+key[i:]]; ok {
			return d, true
		}
	}
	for _, shape := range []string{"allow[]", "deny[]", "allow", "deny", "default"} {
		if i := strings.LastIndex(key, "."+shape); i >= 0 {
			if d, ok := keyDocs["*."+key[i+1:]]; ok {
				return d, true
			}
		}
	}
	return "", false
}

// renderConfigDoc renders docs/configuration.md.
func renderConfigDoc(t *testing.T) string {
	var b strings.Builder
	b.WriteString("# Deployment configuration reference\n\n")
	b.WriteString("<!-- Generated from the deployment schema (internal/config) by TestConfigurationReferenceMatchesTheSchema; PABLO_UPDATE_DOCS=1 go test ./internal/config -run TestConfigurationReferenceMatchesTheSchema rewrites it. Do not edit by hand. -->\n\n")
	b.WriteString("Every key of a deployment file (`schema_version = 1`, TOML). `NAME` stands for a name you choose, `[]` for each element of an array of tables.\n")
	b.WriteString("**Default** is the built-in value (empty: none, the key is absent unless written). **Run override**: `narrow` keys may be overridden per run (`pablo run` flags, `LoadOptions.Overrides`); under lock only downwards (a ceiling lower, a switch off) whether or not `allowed_run_overrides` lists them, unless `deployment.narrowing_run_overrides = \"listed\"`; `if listed` keys only when `allowed_run_overrides` names them under lock; `unlocked only` keys never under lock; the rest never per run. **Go** marks a key the reference (the Rust original) does not have; see docs/differences.md.\n")
	b.WriteString("Paths are objects (`{ base = \"binding\", name = \"workspace\", path = \".\" }`, bases `source`, `config`, `workspace`, `binding`); secrets are never values, only credential names.\n")
	section := ""
	for _, k := range schemaKeys() {
		head := sectionOf(k.key)
		if head != section {
			section = head
			fmt.Fprintf(&b, "\n## `%s`\n\n| Key | Type | Default | Range | Run override | Go | What it does |\n|---|---|---|---|---|---|---|\n", head)
		}
		d, ok := describeKey(k.key)
		if !ok {
			t.Errorf("%s has no description: add it to keyDocs", k.key)
		}
		goExt := ""
		if isGoExtension(k.key) {
			goExt = "yes"
		}
		cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", k.key, cell(typeOf(k.spec)), cell(defaultOf(k.spec)), cell(rangeOf(k.spec)), overrideOf(k.key), goExt, cell(d))
	}
	return b.String()
}

// sectionOf is the heading a key is listed under.
func sectionOf(key string) string {
	parts := strings.SplitN(key, ".", 3)
	switch {
	case parts[0] == "options" && len(parts) > 1:
		return "options." + strings.TrimSuffix(parts[1], "[]")
	case strings.HasPrefix(parts[0], "authority"):
		return "[[authority]]"
	case parts[0] == "schema_version" || parts[0] == "imports" || parts[0] == "profile":
		return "top level"
	}
	return parts[0]
}

// TestConfigurationReferenceMatchesTheSchema: docs/configuration.md is
// what the schema generates, and every key has a description.
func TestConfigurationReferenceMatchesTheSchema(t *testing.T) {
	want := renderConfigDoc(t)
	got, _ := os.ReadFile(configDocPath)
	if string(got) == want {
		return
	}
	if os.Getenv("PABLO_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(configDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/configuration.md differs from the schema; run PABLO_UPDATE_DOCS=1 go test ./internal/config -run %s and read the diff", t.Name())
}

// TestGoExtensionListNamesSchemaKeys: every Go-extension entry names a
// key (or a prefix of keys) the schema has, so the list cannot outlive
// a key.
func TestGoExtensionListNamesSchemaKeys(t *testing.T) {
	keys := schemaKeys()
	for _, e := range goExtensions {
		found := false
		for _, k := range keys {
			found = found || k.key == e || strings.HasSuffix(e, ".") && strings.HasPrefix(k.key, e)
		}
		if !found {
			t.Errorf("goExtensions names %q, which is no key of the schema", e)
		}
	}
	for k := range keyDocs {
		if strings.HasPrefix(k, "*.") {
			continue
		}
		if !slices.ContainsFunc(keys, func(d docKey) bool { return d.key == k }) {
			t.Errorf("keyDocs describes %q, which is no key of the schema", k)
		}
	}
}
