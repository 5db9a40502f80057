package config

import (
	"os"
	"path/filepath"
	"testing"
)

// originals holds the original's deployment files, kept in the repository
// as compatibility fixtures (see its README).
const originals = "../../testdata/reference"

// shipped is the directory of Pablo's own presets.
const shipped = "../../presets"

func TestReferencePresetsLoad(t *testing.T) {
	ws := t.TempDir()
	for _, f := range []string{"presets/production.toml", "presets/development.toml", "presets/base.toml", "examples/vercel.toml", "examples/open-responses.toml"} {
		t.Run(f, func(t *testing.T) {
			d, err := Load(LoadOptions{Config: filepath.Join(originals, f), Bindings: map[string]string{"workspace": ws, "preset": filepath.Join(originals, "presets")}})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(d.Fingerprint)
			out, err := d.Render()
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "rendered.toml")
			os.WriteFile(p, out, 0o600)
			d2, err := Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws, "preset": filepath.Join(originals, "presets")}})
			if err != nil {
				t.Fatalf("reload: %v\n%s", err, out)
			}
			if d2.Fingerprint != d.Fingerprint {
				t.Fatalf("fingerprint changed after render: %s vs %s", d.Fingerprint, d2.Fingerprint)
			}
		})
	}
}

// TestShippedPresetsMeanWhatTheOriginalsMean: each preset Pablo ships
// (presets/, in our own words) resolves to the same configuration as the
// original's preset of the same name, with no profile and with the one
// profile they define: the fingerprint covers every resolved key, the
// credentials and the locked [[authority]] layer, not the files' bytes or
// comments. Each renders to a document with the same fingerprint, and the
// presets the original locks are locked.
func TestShippedPresetsMeanWhatTheOriginalsMean(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, name := range []string{"base.toml", "development.toml", "production.toml"} {
		for _, profile := range []string{"", "observed"} {
			t.Run(name+"/profile="+profile, func(t *testing.T) {
				t.Parallel()
				load := func(dir string) *Deployment {
					t.Helper()
					d, err := Load(LoadOptions{Config: filepath.Join(dir, name), Profile: profile, Bindings: map[string]string{"workspace": ws, "preset": dir}})
					if err != nil {
						t.Fatalf("%s: %v", filepath.Join(dir, name), err)
					}
					return d
				}
				ours, theirs := load(shipped), load(filepath.Join(originals, "presets"))
				if ours.Fingerprint != theirs.Fingerprint {
					t.Fatalf("the shipped %s means something else than the original's: %s vs %s\nours:   %s\ntheirs: %s", name, ours.Fingerprint, theirs.Fingerprint, ours.CanonicalJSON(), theirs.CanonicalJSON())
				}
				if ours.Locked() != theirs.Locked() {
					t.Fatalf("the shipped %s: locked %v, the original's %v", name, ours.Locked(), theirs.Locked())
				}
				out, err := ours.Render()
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(t.TempDir(), "rendered.toml")
				if err := os.WriteFile(p, out, 0o600); err != nil {
					t.Fatal(err)
				}
				again, err := Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws, "preset": shipped}})
				if err != nil || again.Fingerprint != ours.Fingerprint {
					t.Fatalf("render + reload of the shipped %s: %v", name, err)
				}
			})
		}
	}
}
