package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"slices"
)

// A user layer (LoadOptions.UserConfig) and a workspace layer
// (LoadOptions.WorkspaceConfig) sit between the built-in defaults and the
// entry tree: defaults < user < workspace < entry < environment <
// overrides. Each is one file holding options only: it cannot import,
// declare credentials, environment bindings, profiles or authority, or
// write deployment controls, so a file the host merely trusts for
// preferences cannot add a credential source or lift a ceiling. Lock mode
// is decided by the entry and the host before either file is opened, and
// a locked deployment refuses both.

// layerKinds are the two optional layers, lowest first.
var layerKinds = []string{"user", "workspace"}

// preferenceLayers reads the user and workspace files the host named and
// returns their contributions, in precedence order.
func (l *loader) preferenceLayers(locked bool, wd string) ([]contribution, error) {
	var out []contribution
	for _, kind := range layerKinds {
		name := l.opts.UserConfig
		if kind == "workspace" {
			name = l.opts.WorkspaceConfig
		}
		if name == "" {
			continue
		}
		flag := "--" + kind + "-config"
		if locked {
			return nil, &Error{Code: CodeOverrideForbidden, Option: flag, Message: "a locked deployment reads no " + kind + " configuration file: lock is decided by the entry and the host alone"}
		}
		real, err := filepath.EvalSymlinks(anchor(name, wd))
		if err != nil {
			return nil, &Error{Code: CodeImportPath, Option: flag, Source: filepath.Base(name), Message: "cannot open the " + kind + " configuration file"}
		}
		c, err := l.preferenceFile(kind, real)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// preferenceFile reads one user or workspace file.
func (l *loader) preferenceFile(kind, real string) (contribution, error) {
	display := kind + ":" + filepath.Base(real)
	raw, err := readBounded(l.ctx, real, maxFileBytes)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.Source = display
			return contribution{}, ce
		}
		return contribution{}, &Error{Code: CodeImportPath, Source: display, Message: "cannot read the file"}
	}
	l.total += len(raw)
	doc, err := parseDocument(display, real, raw)
	if err != nil {
		return contribution{}, err
	}
	if v, ok := doc.tree["schema_version"]; !ok || v != int64(1) {
		return contribution{}, doc.errf(CodeSchemaVersion, "/schema_version", "schema_version = 1 is required (got %s)", describe(v, ok))
	}
	var opts map[string]any
	for _, key := range sortedKeys(doc.tree) {
		switch key {
		case "schema_version":
		case "options":
			// Source paths are relative to the file's own directory and
			// stand for config paths (REFERENCE §1.5), which stay in the
			// config root: a layer inside the root may write them, one
			// outside (the usual user file) writes workspace, binding or
			// config paths, and a source path in it is refused saying so.
			rel, _ := filepath.Rel(l.root, filepath.Dir(real))
			nv, ce := normalize(optionsSpec(), doc.tree[key], "/options", &normCtx{dir: filepath.ToSlash(rel), layer: kind})
			if ce != nil {
				if ce.Source == "" {
					ce.Source = display
				}
				if ce.Line == 0 {
					ce.Line = doc.line(ce.Option)
				}
				return contribution{}, ce
			}
			opts = nv.(map[string]any)
		default:
			what := "unknown option"
			if slices.Contains(topLevelKeys(), key) {
				what = "not allowed in a " + kind + " configuration file (it holds options only)"
			}
			ce := doc.errf(CodeInvalidValue, pointer(key), "%s: %q", what, shown(key, 64))
			return contribution{}, ce
		}
	}
	sum := sha256.Sum256(raw)
	return contribution{id: l.nextSource(), kind: kind, locator: display, digest: "sha256:" + hex.EncodeToString(sum[:]), options: opts}, nil
}

// insertLayers puts the preference layers right after the defaults.
func (l *loader) insertLayers(layers []contribution) {
	if len(layers) == 0 {
		return
	}
	l.contribs = slices.Insert(l.contribs, 1, layers...)
}
