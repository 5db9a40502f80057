package config

import (
	"path/filepath"
	"testing"
)

func BenchmarkLoadProduction(b *testing.B) {
	ws := b.TempDir()
	opts := LoadOptions{Config: filepath.Join(originals, "presets/production.toml"),
		Bindings: map[string]string{"workspace": ws, "preset": filepath.Join(originals, "presets")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}
