//go:build linux

package shell

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/sandbox"
)

// BenchmarkShellRunSandbox is the cost of the sandbox per shell.run of
// `printf hi` (no command policy: /bin/sh -c), unconfined and in the
// default sandbox, with the median of each as p50-ns. Compare the two with
// `benchstat -col /sandbox`; the target is at most 6 ms added at p50.
func BenchmarkShellRunSandbox(b *testing.B) {
	for _, p := range []sandbox.Profile{{Mode: sandbox.Off}, {}} {
		r, err := New(Options{Workspace: b.TempDir(), Sandbox: p})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("sandbox="+string(p.Normalized().Mode), func(b *testing.B) {
			ctx := context.Background()
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				res, err := r.Run(ctx, Request{Command: "printf hi", Cwd: "."})
				if err != nil || res.Stdout != "hi" {
					b.Fatal(res, err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
		})
	}
}
