package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Deployment is a resolved deployment: every import, profile, environment
// binding and override applied, every default filled in, every reference
// checked. It is immutable once Load returns it; its Fingerprint identifies
// its meaning.
type Deployment struct {
	// Fingerprint is "sha256:" over the canonical resolved configuration.
	Fingerprint string
	// InputFingerprint hashes the ordered sources that produced it.
	InputFingerprint string
	// Sources lists every contribution in precedence order.
	Sources []Source
	// Provenance maps JSON pointers under /options to their origins.
	Provenance map[string][]Origin
	// Options is the typed view of the resolved options.
	Options Options

	tree         map[string]any
	bindings     map[string]string
	configRoot   string
	locked       bool
	loopbackHTTP bool
	hostTrace    bool
	credentials  map[string]CredentialRef
	layers       []AuthorityLayer
	credDests    map[string][]string
}

// Source is one contribution to a deployment.
type Source struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Locator string `json:"locator"`
	Digest  string `json:"digest,omitempty"`
}

// Locked reports whether the deployment runs in lock mode.
func (d *Deployment) Locked() bool { return d.locked }

// LoopbackHTTP reports whether plain http to a loopback host stands in for
// remote endpoints: the host asked for the fixture and the deployment is
// not locked.
func (d *Deployment) LoopbackHTTP() bool { return d.loopbackHTTP }

// Name is deployment.name, "" when the entry file gives none.
func (d *Deployment) Name() string {
	name, _ := d.tree["deployment"].(map[string]any)["name"].(string)
	return name
}

// AllowedRunOverrides lists what a run may override.
func (d *Deployment) AllowedRunOverrides() []string {
	var out []string
	for _, v := range d.tree["deployment"].(map[string]any)["allowed_run_overrides"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

// Credentials returns the credential references by name.
func (d *Deployment) Credentials() map[string]CredentialRef {
	out := make(map[string]CredentialRef, len(d.credentials))
	for k, v := range d.credentials {
		out[k] = v
	}
	return out
}

// AuthorityLayers returns the immutable layers in evaluation order.
func (d *Deployment) AuthorityLayers() []AuthorityLayer {
	return append([]AuthorityLayer(nil), d.layers...)
}

// Bindings returns the resolved binding directories.
func (d *Deployment) Bindings() map[string]string {
	out := make(map[string]string, len(d.bindings))
	for k, v := range d.bindings {
		out[k] = v
	}
	return out
}

// CanonicalJSON returns the canonical encoding of the resolved configuration
// (the bytes the fingerprint covers, less the version envelope).
func (d *Deployment) CanonicalJSON() []byte { return canonicalJSON(d.tree) }

// Explain returns the resolved inspection envelope: schema_version,
// contract_revision, config, fingerprint, sources, provenance and
// input_fingerprint, as compact canonical JSON.
func (d *Deployment) Explain() []byte {
	var sources []any
	for _, s := range d.Sources {
		m := map[string]any{"id": s.ID, "kind": s.Kind, "locator": s.Locator}
		if s.Digest != "" {
			m["digest"] = s.Digest
		}
		sources = append(sources, m)
	}
	prov := map[string]any{}
	for ptr, origins := range d.Provenance {
		var l []any
		for _, o := range origins {
			l = append(l, map[string]any{"source": o.Source, "operation": o.Operation})
		}
		prov["/config"+ptr] = l
	}
	return canonicalJSON(map[string]any{
		"schema_version":    int64(1),
		"contract_revision": ContractRevision,
		"config":            d.tree,
		"fingerprint":       d.Fingerprint,
		"sources":           sources,
		"provenance":        prov,
		"input_fingerprint": d.InputFingerprint,
	})
}

// Workspace resolves run.workspace to a real absolute directory.
func (d *Deployment) Workspace() (string, error) {
	return d.resolveDir(d.Options.Run.Workspace, "")
}

// ResolvePath resolves a path object to a real absolute path that stays
// inside its root, symlinks included. The target need not exist; its
// deepest existing ancestor must resolve inside the root.
func (d *Deployment) ResolvePath(p PathRef) (string, error) {
	ws := ""
	if p.Base == "workspace" {
		var err error
		if ws, err = d.Workspace(); err != nil {
			return "", err
		}
	}
	return d.resolvePathIn(p, ws)
}

func (d *Deployment) resolveDir(p PathRef, ws string) (string, error) {
	out, err := d.resolvePathIn(p, ws)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(out)
	if err != nil || !st.IsDir() {
		return "", &PathError{Ref: p, Reason: "is not an existing directory"}
	}
	return out, nil
}

func (d *Deployment) resolvePathIn(p PathRef, ws string) (string, error) {
	var root string
	switch p.Base {
	case "config", "source":
		root = d.configRoot
	case "workspace":
		root = ws
		if root == "" {
			return "", &PathError{Ref: p, Reason: "the workspace is not known here"}
		}
	case "binding":
		r, ok := d.bindings[p.Name]
		if !ok {
			return "", &PathError{Ref: p, Unbound: true, Reason: fmt.Sprintf("binding %q is not given", p.Name)}
		}
		root = r
	default:
		return "", &PathError{Ref: p, Reason: "unknown base"}
	}
	return ResolveInside(root, p.Path)
}

// ResolveInside joins a relative path onto a real root directory and checks,
// lexically and then through symlinks, that the result stays inside root.
func ResolveInside(root, rel string) (string, error) {
	ref := PathRef{Base: "root", Path: rel}
	if err := checkRelPath(rel); err != nil {
		return "", &PathError{Ref: ref, Reason: err.Error()}
	}
	joined := filepath.Join(root, filepath.FromSlash(rel))
	if !within(root, joined) {
		return "", &PathError{Ref: ref, Reason: "escapes its root"}
	}
	// Resolve the deepest existing ancestor through symlinks.
	probe, rest := joined, ""
	for {
		real, err := filepath.EvalSymlinks(probe)
		if err == nil {
			if !within(root, real) {
				return "", &PathError{Ref: ref, Reason: "a symlink leads out of its root"}
			}
			if rest != "" {
				real = filepath.Join(real, rest)
			}
			return real, nil
		}
		if !os.IsNotExist(err) {
			if _, lerr := os.Lstat(probe); lerr == nil {
				return "", &PathError{Ref: ref, Reason: "a symlink cannot be resolved"}
			}
		}
		parent := filepath.Dir(probe)
		if parent == probe || !within(root, parent) {
			return "", &PathError{Ref: ref, Reason: "root does not exist"}
		}
		rest = filepath.Join(filepath.Base(probe), rest)
		probe = parent
	}
}

// build derives the typed view from the resolved tree.
func (d *Deployment) build() error {
	raw, err := json.Marshal(d.tree["options"])
	if err != nil {
		return &Error{Code: CodeInvalidValue, Option: "/options", Message: "internal: " + err.Error()}
	}
	if err := json.Unmarshal(raw, &d.Options); err != nil {
		return &Error{Code: CodeInvalidValue, Option: "/options", Message: "internal: " + err.Error()}
	}
	return nil
}
