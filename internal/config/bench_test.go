package config

import (
	"path/filepath"
	"testing"
)

func BenchmarkLoadProduction(b *testing.B) {
	ws := b.TempDir()
	opts := LoadOptions{Config: filepath.Join(sharedRef, "presets/production.toml"),
		Bindings: map[string]string{"workspace": ws, "preset": filepath.Join(sharedRef, "presets")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}
