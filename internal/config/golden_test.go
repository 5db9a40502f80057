package config

import (
	"os"
	"path/filepath"
	"testing"
)

const sharedRef = "../../../shared/reference"

func TestReferencePresetsLoad(t *testing.T) {
	ws := t.TempDir()
	for _, f := range []string{"presets/production.toml", "presets/development.toml", "presets/base.toml", "examples/vercel.toml", "examples/open-responses.toml"} {
		t.Run(f, func(t *testing.T) {
			d, err := Load(LoadOptions{Config: filepath.Join(sharedRef, f), Bindings: map[string]string{"workspace": ws, "preset": filepath.Join(sharedRef, "presets")}})
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
			d2, err := Load(LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws, "preset": filepath.Join(sharedRef, "presets")}})
			if err != nil {
				t.Fatalf("reload: %v\n%s", err, out)
			}
			if d2.Fingerprint != d.Fingerprint {
				t.Fatalf("fingerprint changed after render: %s vs %s", d.Fingerprint, d2.Fingerprint)
			}
		})
	}
}
