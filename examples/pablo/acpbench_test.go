package main

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// acpBenchSetup builds a stripped binary and a one-reply deployment.
func acpBenchSetup(b *testing.B) (bin, cfg, ws string) {
	dir := b.TempDir()
	bin = filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg = acpDeployment(b, dir, "bench", `{"turns":[{"text":["hello from pablo"]}]}`, "")
	return bin, cfg, ws
}

// BenchmarkACPWarmPrompt measures a warm prompt of the engine and the ACP
// server alone (BenchmarkReferenceACP is the reference's acp_warm_prompt_ms,
// by its method): one `pablo acp --stdio` process, warmed by five
// prompts, a scripted one-text reply, from the request's write on the real
// stdin pipe to its response read from stdout. NewSession prompts a fresh
// session each time (the reference's independent sessions; the session's
// creation not timed); SameSession continues one conversation, whose
// earlier turns each prompt carries (a new session every 64 prompts, not
// timed). It reports the median and the 99th percentile
// (warm-prompt-p50-us, warm-prompt-p99-us).
func BenchmarkACPWarmPrompt(b *testing.B) {
	bin, cfg, ws := acpBenchSetup(b)
	for _, c := range []struct {
		name  string
		turns int // prompts per session
	}{{"NewSession", 1}, {"SameSession", 64}} {
		b.Run(c.name, func(b *testing.B) {
			p := startACP(b, bin, "--config", cfg, "--bind", "workspace="+ws)
			if _, _, err := p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}); err != nil {
				b.Fatal(err)
			}
			session, used := "", c.turns
			prompt := func() time.Duration {
				if used == c.turns {
					var err error
					if session, err = p.session(ws); err != nil {
						b.Fatal(err)
					}
					used = 0
				}
				used++
				start := time.Now()
				stop, notes, err := p.prompt(session, "hello")
				took := time.Since(start)
				if err != nil || stop != "end_turn" || notes == 0 {
					b.Fatalf("prompt: %v, stop reason %q after %d updates", err, stop, notes)
				}
				return took
			}
			for range 5 {
				prompt()
			}
			var samples []time.Duration
			for b.Loop() {
				samples = append(samples, prompt())
			}
			b.ReportMetric(float64(percentile(samples, 0.5).Nanoseconds())/1e3, "warm-prompt-p50-us")
			b.ReportMetric(float64(percentile(samples, 0.99).Nanoseconds())/1e3, "warm-prompt-p99-us")
		})
	}
}
