package pablo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/measure"
)

// BenchmarkReferenceCoreRun takes the reference's core run (core_run_ms) by
// the reference's method: the real Chat Completions adapter against the
// loopback SSE fixture of internal/measure, two model calls, the first a
// shell.run of one real printf, the second 32 deltas of 16 bytes. The
// deployment, the provider, the tool catalogs and the runtime are built
// outside the timer, as the reference builds its provider, tool registry and
// OTel SDK; the time is Runtime.Run's. Five warm-up tasks are dropped; run
// it with -benchtime 30x for the reference's 30 samples. It reports
// nearest-rank p50 and p95 (core-run-p50-ms, core-run-p95-ms), once with the
// default sandbox (bubblewrap) and once with options.shell.sandbox.mode =
// "off" under a literal command policy that allows /usr/bin/printf (without
// one an unsandboxed shell.run waits for an approver).
func BenchmarkReferenceCoreRun(b *testing.B) {
	for _, sb := range measure.Sandboxes() {
		b.Run(sb.Name, func(b *testing.B) {
			provider := measure.NewProvider()
			defer provider.Close()
			dir, ws := b.TempDir(), b.TempDir()
			cfg := filepath.Join(dir, "deployment.toml")
			if err := os.WriteFile(cfg, []byte(measure.Deployment(sb)), 0o600); err != nil {
				b.Fatal(err)
			}
			d, err := Load(LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": ws}})
			if err != nil {
				b.Fatal(err)
			}
			rt, err := d.NewRuntime(context.Background(), HostOptions{FixtureEndpoint: provider.Endpoint()})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			want := measure.FinalText()
			sample := func() time.Duration {
				provider.Reset()
				start := time.Now()
				obj, err := rt.Run(context.Background(), "Run the measurement command.")
				took := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if obj.Outcome.Status != event.StatusCompleted || obj.Outcome.Output == nil || *obj.Outcome.Output != want {
					b.Fatalf("the task ended %s with output %v, want completed with the 512 streamed bytes: %+v", obj.Outcome.Status, obj.Outcome.Output, obj.Outcome)
				}
				if err := provider.Check(); err != nil {
					b.Fatal(err)
				}
				return took
			}
			for range measure.Warmups {
				sample()
			}
			var samples []time.Duration
			for b.Loop() {
				samples = append(samples, sample())
			}
			b.ReportMetric(ms(measure.Percentile(samples, 0.50)), "core-run-p50-ms")
			b.ReportMetric(ms(measure.Percentile(samples, 0.95)), "core-run-p95-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
