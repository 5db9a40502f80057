//go:build linux

package shell

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/sandbox"
)

// BenchmarkShellRun compares a governed shell.run of `/usr/bin/printf x`
// under the production preset's command policy with a bare exec.Command of
// the same program. bare_sh adds the launcher the governed path must use
// (`/bin/sh -c 'exec "$@"'`), to separate the cost of governance from the
// cost of the extra exec.
func BenchmarkShellRun(b *testing.B) {
	policy, err := NewPolicy(productionLayers()...)
	if err != nil {
		b.Fatal(err)
	}
	// Unconfined, as a bare exec.Command is: BenchmarkShellRunSandbox
	// measures the sandbox.
	r, err := New(Options{Workspace: b.TempDir(), Policy: policy, Sandbox: sandbox.Profile{Mode: sandbox.Off}})
	if err != nil {
		b.Fatal(err)
	}
	direct, err := New(Options{Workspace: b.TempDir(), Policy: policy, DirectExec: true, Sandbox: sandbox.Profile{Mode: sandbox.Off}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("governed_direct", func(b *testing.B) {
		for b.Loop() {
			res, err := direct.Run(ctx, Request{Command: "/usr/bin/printf x", Cwd: "."})
			if err != nil || res.Stdout != "x" {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("governed", func(b *testing.B) {
		for b.Loop() {
			res, err := r.Run(ctx, Request{Command: "/usr/bin/printf x", Cwd: "."})
			if err != nil || res.Stdout != "x" {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			out, err := exec.Command("/usr/bin/printf", "x").Output()
			if err != nil || string(out) != "x" {
				b.Fatal(string(out), err)
			}
		}
	})
	b.Run("bare_sh", func(b *testing.B) {
		for b.Loop() {
			out, err := exec.Command("/bin/sh", "-c", literalScript, "sh", "/usr/bin/printf", "x").Output()
			if err != nil || string(out) != "x" {
				b.Fatal(string(out), err)
			}
		}
	})
}

// BenchmarkShellRunPaired alternates one governed run of each dispatch, one
// bare exec.Command and one bare launcher run per iteration and reports the
// median of each and their ratios, which holds up on a noisy, shared machine
// better than comparing separate sub-benchmarks.
func BenchmarkShellRunPaired(b *testing.B) {
	policy, err := NewPolicy(productionLayers()...)
	if err != nil {
		b.Fatal(err)
	}
	// Unconfined, as a bare exec.Command is: BenchmarkShellRunSandbox
	// measures the sandbox.
	r, err := New(Options{Workspace: b.TempDir(), Policy: policy, Sandbox: sandbox.Profile{Mode: sandbox.Off}})
	if err != nil {
		b.Fatal(err)
	}
	direct, err := New(Options{Workspace: b.TempDir(), Policy: policy, DirectExec: true, Sandbox: sandbox.Profile{Mode: sandbox.Off}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var governed, governedDirect, bare, bareSh []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := direct.Run(ctx, Request{Command: "/usr/bin/printf x", Cwd: "."}); err != nil {
			b.Fatal(err)
		}
		governedDirect = append(governedDirect, time.Since(start))
		start = time.Now()
		if _, err := r.Run(ctx, Request{Command: "/usr/bin/printf x", Cwd: "."}); err != nil {
			b.Fatal(err)
		}
		governed = append(governed, time.Since(start))
		start = time.Now()
		if _, err := exec.Command("/usr/bin/printf", "x").Output(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(start))
		start = time.Now()
		if _, err := exec.Command("/bin/sh", "-c", literalScript, "sh", "/usr/bin/printf", "x").Output(); err != nil {
			b.Fatal(err)
		}
		bareSh = append(bareSh, time.Since(start))
	}
	g, n, s, gd := median(governed), median(bare), median(bareSh), median(governedDirect)
	b.ReportMetric(float64(gd.Nanoseconds()), "governed_direct-median-ns")
	b.ReportMetric(float64(gd)/float64(n), "governed_direct/bare")
	b.ReportMetric(float64(g.Nanoseconds()), "governed-median-ns")
	b.ReportMetric(float64(n.Nanoseconds()), "bare-median-ns")
	b.ReportMetric(float64(s.Nanoseconds()), "bare_sh-median-ns")
	b.ReportMetric(float64(g)/float64(n), "governed/bare")
	b.ReportMetric(float64(g)/float64(s), "governed/bare_sh")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
