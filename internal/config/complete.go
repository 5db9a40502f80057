package config

import (
	"encoding/json"
	"maps"
	"strconv"
)

// complete writes the defaults that depend on other values into the
// resolved options, so the canonical form and the fingerprint hold them:
// the single model's id by provider (when no route is selected), and each
// MCP server's required flag, timeouts and (for stdio) working directory.
func complete(options map[string]any) {
	if m, ok := options["model"].(map[string]any); ok && options["model_route"] == nil {
		completeModel(m)
	}
	write := false
	if fs, ok := options["filesystem"].(map[string]any); ok {
		write = fs["enabled"] == true && fs["write"] == true
	}
	if sh, ok := options["shell"].(map[string]any); ok {
		sb, _ := sh["sandbox"].(map[string]any)
		if sb == nil {
			sb = map[string]any{}
		}
		sh["sandbox"] = completeSandbox(sb, write)
	}
	mcp, _ := options["mcp"].(map[string]any)
	servers, _ := mcp["servers"].(map[string]any)
	for _, s := range servers {
		completeMCPServer(s.(map[string]any))
	}
}

// completeSandbox writes a sandbox's defaults (seed 002's "defaults to
// deny"): required, network deny, and the workspace writable when fs.write
// is, read-only otherwise. A sandbox that is off keeps what was written.
func completeSandbox(sb map[string]any, write bool) map[string]any {
	setDefault(sb, "mode", "required")
	if sb["mode"] == "off" {
		return sb
	}
	fs := "read-only"
	if write {
		fs = "workspace-write"
	}
	setDefault(sb, "filesystem", fs)
	setDefault(sb, "network", "deny")
	return sb
}

// completeModel gives options.model the id of its provider's default.
func completeModel(m map[string]any) {
	provider, _ := m["provider"].(string)
	if _, ok := m["id"]; !ok {
		if id := defaultModelID(provider); id != "" {
			m["id"] = id
		}
	}
}

// completeMCPServer gives an MCP server the reference's defaults: required,
// 30 s to start, 60 s per operation, and a stdio server the workspace as
// its working directory.
func completeMCPServer(s map[string]any) {
	setDefault(s, "required", true)
	setDefault(s, "startup_timeout_ms", int64(30000))
	setDefault(s, "operation_timeout_ms", int64(60000))
	if s["transport"] == "stdio" {
		setDefault(s, "cwd", map[string]any{"base": "workspace", "path": "."})
		sb, _ := s["sandbox"].(map[string]any)
		if sb == nil {
			sb = map[string]any{}
		}
		// A server's sandbox shows its cwd read-only unless it asks for
		// more: it is not the shell, and writing is not its default.
		s["sandbox"] = completeSandbox(sb, false)
	}
}

func setDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// decode derives the typed values the cross-field rules read from the
// resolved tree: the options (output.schema left out: a schema file is
// read only after the rules pass), the credentials and the authority
// layers.
func (d *Deployment) decode() error {
	options := maps.Clone(d.tree["options"].(map[string]any))
	if out, ok := options["output"].(map[string]any); ok {
		out = maps.Clone(out)
		delete(out, "schema")
		options["output"] = out
	}
	if err := decodeInto(options, &d.Options); err != nil {
		return &Error{Code: CodeInvalidValue, Option: "/options", Message: "internal: " + err.Error()}
	}
	creds := d.tree["credentials"].(map[string]any)
	d.credentials = make(map[string]CredentialRef, len(creds))
	for _, name := range sortedKeys(creds) {
		var ref CredentialRef
		if err := decodeInto(creds[name], &ref); err != nil {
			return &Error{Code: CodeInvalidValue, Option: "/credentials" + pointer(name), Message: "malformed credential"}
		}
		d.credentials[name] = ref
	}
	for i, lv := range d.tree["authority"].([]any) {
		lm := lv.(map[string]any)
		var layer AuthorityLayer
		if err := decodeInto(lm, &layer); err != nil {
			return &Error{Code: CodeInvalidValue, Option: "/authority/" + strconv.Itoa(i), Message: "malformed authority layer"}
		}
		layer.present = map[string]bool{}
		for k := range lm {
			layer.present[k] = true
		}
		d.layers = append(d.layers, layer)
	}
	return nil
}

// decodeInto decodes a normalized tree into its typed form.
func decodeInto(tree any, into any) error {
	raw, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}
