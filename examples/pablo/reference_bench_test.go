package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/measure"
)

// The reference's figures of the built binary, by its method (REFERENCE
// §6.1, internal/measure): the loopback SSE provider in the Chat
// Completions wire format, a real printf through shell.run, 512 streamed
// bytes, each sample checked. Run them with -benchtime 30x for the
// reference's 30 samples (5 warm-ups are dropped first); scripts/measure.sh
// runs them all and adds the binary's size and the load average.

// measureBinary is PABLO_MEASURE_BINARY when set (scripts/measure.sh
// builds the release binary once), else this tree built with -trimpath.
func measureBinary(b *testing.B) string {
	if bin := os.Getenv("PABLO_MEASURE_BINARY"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "pablo")
	if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// measureDeployment writes the measurement's deployment in the sandbox sb
// and a workspace; it returns both paths.
func measureDeployment(b *testing.B, sb measure.Sandbox) (cfg, ws string) {
	dir := b.TempDir()
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg = filepath.Join(dir, "deployment.toml")
	if err := os.WriteFile(cfg, []byte(measure.Deployment(sb)), 0o600); err != nil {
		b.Fatal(err)
	}
	return cfg, ws
}

// BenchmarkReferenceCLI takes the reference's CLI figures by the reference's
// method: for each sample a whole `pablo run` process, timed from spawn to
// the first request at the loopback provider (cli_provider_ready_ms:
// spawn-to-first-request-p50-ms) and to its exit (cli_total_ms:
// whole-task-p50-ms), its JSON checked (completed, the 512 streamed bytes)
// and the provider's two requests; and `pablo --version`'s wall time
// (version_process_ms).
func BenchmarkReferenceCLI(b *testing.B) {
	bin := measureBinary(b)
	for _, sb := range measure.Sandboxes() {
		b.Run(sb.Name, func(b *testing.B) {
			provider := measure.NewProvider()
			defer provider.Close()
			cfg, ws := measureDeployment(b, sb)
			want, _ := json.Marshal(measure.FinalText())
			sample := func() (ready, total time.Duration) {
				provider.Reset()
				cmd := exec.Command(bin, "run", "Run the measurement command.", "--config", cfg, "--bind", "workspace="+ws,
					"--fixture-endpoint", provider.Endpoint(), "--json")
				start := time.Now()
				out, err := cmd.Output()
				total = time.Since(start)
				if err != nil || !strings.Contains(string(out), `"status":"completed"`) || !strings.Contains(string(out), `"output":`+string(want)) {
					b.Fatalf("pablo run: %v\n%s", err, out)
				}
				if err := provider.Check(); err != nil {
					b.Fatal(err)
				}
				return provider.FirstRequest().Sub(start), total
			}
			for range measure.Warmups {
				sample()
			}
			var ready, total []time.Duration
			for b.Loop() {
				r, t := sample()
				ready, total = append(ready, r), append(total, t)
			}
			reportMS(b, "spawn-to-first-request", ready)
			reportMS(b, "whole-task", total)
		})
	}
	b.Run("version", func(b *testing.B) {
		sample := func() time.Duration {
			start := time.Now()
			if out, err := exec.Command(bin, "--version").Output(); err != nil || len(out) == 0 {
				b.Fatalf("pablo --version: %v %q", err, out)
			}
			return time.Since(start)
		}
		for range measure.Warmups {
			sample()
		}
		var samples []time.Duration
		for b.Loop() {
			samples = append(samples, sample())
		}
		reportMS(b, "version", samples)
	})
}

// BenchmarkReferenceACP takes the reference's ACP figures by the reference's
// method, through the official TypeScript client SDK
// (testdata/acpmeasure.mjs) against `pablo acp --stdio`. Each sample is one
// fresh process (initialize, idle RSS by `ps -o rss=` 50 ms after
// initialize, a new session, one prompt, EOF) and one warm prompt (a new
// session in a process kept for up to 40 sessions after 5 warm-up tasks). It
// reports acp-initialize, acp-prompt (fresh) and acp-warm-prompt p50 and p95
// in ms, and idle-rss-p50-KiB.
func BenchmarkReferenceACP(b *testing.B) {
	peers := needACPPeers(b)
	bin := measureBinary(b)
	for _, sb := range measure.Sandboxes() {
		b.Run(sb.Name, func(b *testing.B) {
			provider := measure.NewProvider()
			defer provider.Close()
			cfg, ws := measureDeployment(b, sb)
			conf, _ := json.Marshal(map[string]any{
				"sdk": peers.sdk, "bin": bin, "workspace": ws, "text": measure.FinalText(),
				"args":    []string{"acp", "--stdio", "--config", cfg, "--bind", "workspace=" + ws, "--fixture-endpoint", provider.Endpoint()},
				"warmups": measure.Warmups, "sessions": 40,
			})
			driver := exec.Command(peers.node, "testdata/acpmeasure.mjs", string(conf))
			driver.Stderr = os.Stderr
			in, err := driver.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			out, err := driver.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := driver.Start(); err != nil {
				b.Fatal(err)
			}
			defer driver.Wait()
			defer in.Close()
			answers := bufio.NewScanner(out)
			answers.Buffer(nil, 1<<20)
			type answer struct {
				InitializeMS float64  `json:"initialize_ms"`
				IdleRSSKiB   int64    `json:"idle_rss_kib"`
				PromptMS     float64  `json:"prompt_ms"`
				WarmPromptMS float64  `json:"warm_prompt_ms"`
				Tasks        int      `json:"tasks"`
				Problems     []string `json:"problems"`
			}
			// ask runs one command and checks the provider saw exactly
			// two requests for each task the driver ran, each second one
			// with the shell's output.
			ask := func(command string) answer {
				provider.Reset()
				if _, err := in.Write([]byte(command + "\n")); err != nil {
					b.Fatal(err)
				}
				if !answers.Scan() {
					b.Fatalf("the ACP driver ended: %v", answers.Err())
				}
				var a answer
				if err := json.Unmarshal(answers.Bytes(), &a); err != nil {
					b.Fatalf("the ACP driver answered %q: %v", answers.Bytes(), err)
				}
				for _, p := range a.Problems {
					b.Error(p)
				}
				if b.Failed() {
					b.FailNow()
				}
				if err := provider.CheckTasks(a.Tasks); err != nil {
					b.Fatal(err)
				}
				return a
			}
			for range measure.Warmups {
				ask("fresh")
			}
			var initialize, prompt, warm []time.Duration
			var rss []int64
			for b.Loop() {
				f, w := ask("fresh"), ask("warm")
				initialize = append(initialize, msDuration(f.InitializeMS))
				prompt = append(prompt, msDuration(f.PromptMS))
				warm = append(warm, msDuration(w.WarmPromptMS))
				rss = append(rss, f.IdleRSSKiB)
			}
			ask("end")
			reportMS(b, "acp-initialize", initialize)
			reportMS(b, "acp-prompt", prompt)
			reportMS(b, "acp-warm-prompt", warm)
			b.ReportMetric(float64(measure.Percentile(rss, 0.5)), "idle-rss-p50-KiB")
		})
	}
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * 1e6) }

// reportMS reports the nearest-rank p50 and p95 of samples in ms.
func reportMS(b *testing.B, name string, samples []time.Duration) {
	b.ReportMetric(float64(measure.Percentile(samples, 0.50).Nanoseconds())/1e6, name+"-p50-ms")
	b.ReportMetric(float64(measure.Percentile(samples, 0.95).Nanoseconds())/1e6, name+"-p95-ms")
}
