package pablo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDeploymentSnapshot is the cost a runtime built from a
// deployment pays at start for its dispatch snapshot: the graph (Skill
// discovery, every tool decided, credentials resolved, the sandbox
// checked once) and the digest.
func BenchmarkDeploymentSnapshot(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"shell_off", "[options.shell]\nenabled = false\n"},
		{"shell_sandboxed", "[options.shell]\nenabled = true\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			d := scriptDeployment(b, dir, ws, `{"turns":[]}`, c.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Snapshot(context.Background(), GraphOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
