package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSpawnToFirstRequest measures, as the reference does (§6.1), a
// whole `pablo run` process against a loopback provider: from spawn to the
// first request reaching the provider (reported as spawn-to-first-request
// ns, the median over the runs), with two model calls, one tool call and
// 32 deltas of 16 bytes per task.
func BenchmarkSpawnToFirstRequest(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("INV-1042 paid\n"), 0o600)
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"openai_compatible\"\nid = \"fixture\"\nendpoint = \"https://fixture.invalid/v1/chat/completions\"\n[options.shell]\nenabled = false\n"), 0o600)

	var first atomic.Int64
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.CompareAndSwap(0, time.Now().UnixNano())
		n := requests.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(s string) { io.WriteString(w, "data: "+s+"\n\n") }
		if n%2 == 1 {
			send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"fs_read","arguments":"{\"path\":\"evidence.md\"}"}}]},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		} else {
			for i := 0; i < 32; i++ {
				send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"delta %02d of 32. "},"finish_reason":null}]}`, i))
			}
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		}
		send("[DONE]")
	}))
	defer srv.Close()
	var samples []time.Duration
	for b.Loop() {
		first.Store(0)
		requests.Store(0)
		cmd := exec.Command(bin, "run", "Was INV-1042 paid?", "--config", cfg, "--bind", "workspace="+ws,
			"--fixture-endpoint", srv.URL+"/v1/chat/completions", "--json")
		start := time.Now()
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), `"status":"completed"`) {
			b.Fatalf("run: %v %s", err, out)
		}
		samples = append(samples, time.Duration(first.Load()-start.UnixNano()))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "spawn-to-first-request-ns")
}
