//go:build linux

package sandbox

import "testing"

// BenchmarkEtcView is the cost of finding the /etc view a runtime's first
// sandboxed call uses, once it exists: a stat per host file.
func BenchmarkEtcView(b *testing.B) {
	dir := b.TempDir()
	etcView(dir)
	b.ReportAllocs()
	for b.Loop() {
		if etcView(dir) == "" {
			b.Fatal("no view")
		}
	}
}
