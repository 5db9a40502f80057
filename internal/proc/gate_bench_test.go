package proc_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// BenchmarkStartGate is what the start gate costs a command: `printf hi`
// started and joined without a recorder (no gate) and under a recorder that
// returns at once (the gate shell holds it until then), with the median
// of each as p50-ns. Compare with `benchstat -col /gate`.
func BenchmarkStartGate(b *testing.B) {
	for _, gated := range []bool{false, true} {
		ctx := context.Background()
		if gated {
			ctx = proc.WithRecorder(ctx, func(context.Context, proc.Group) error { return nil })
		}
		b.Run(map[bool]string{false: "gate=none", true: "gate=shell"}[gated], func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				cmd := exec.Command("/usr/bin/printf", "hi")
				cmd.Env = []string{"PATH=/usr/bin:/bin"}
				p, err := proc.Start(ctx, cmd, proc.Options{MaxStdout: 64})
				if err != nil {
					b.Fatal(err)
				}
				if res, err := p.Wait(); err != nil || string(res.Stdout) != "hi" {
					b.Fatal(res, err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
		})
	}
}
