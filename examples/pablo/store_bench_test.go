package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunStoreToolCall runs the built `pablo run --store` with a script
// of 100 fs.read calls against a fresh bbolt store, and reports the wall
// time each tool call adds (the run less the same run with no tool call,
// over the calls): "turn-per-call" gives each call a model turn of its own
// (three barriers: the model call's and the tool call's two), "one-turn"
// proposes them all in one turn (the tool call's two barriers alone).
func BenchmarkRunStoreToolCall(b *testing.B) {
	const calls = 100
	dir := b.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o600)
	read := `{"name":"fs_read","arguments":{"path":"a.txt"}}`
	scripts := map[string]string{"none": `{"turns":[{"text":["done"]}]}`}
	var turns, one []string
	for range calls {
		turns = append(turns, `{"text":["x"],"tool_calls":[`+read+`]}`)
		one = append(one, read)
	}
	scripts["turn-per-call"] = `{"turns":[` + strings.Join(turns, ",") + `,{"text":["done"]}]}`
	scripts["one-turn"] = `{"turns":[{"text":["x"],"tool_calls":[` + strings.Join(one, ",") + `]},{"text":["done"]}]}`
	for name, s := range scripts {
		os.WriteFile(filepath.Join(dir, name+".json"), []byte(s), 0o600)
		os.WriteFile(filepath.Join(dir, name+".toml"), []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \""+
			name+".json\" }\n[options.shell]\nenabled = false\n"), 0o600)
	}
	run := func(b *testing.B, name string, i int) time.Duration {
		store := filepath.Join(dir, fmt.Sprint(name, i, ".db"))
		defer os.Remove(store)
		cmd := exec.Command(bin, "run", "go", "--config", filepath.Join(dir, name+".toml"), "--bind", "workspace="+ws, "--store", store, "--json")
		start := time.Now()
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), `"status":"completed"`) {
			b.Fatalf("run %s: %v %s", name, err, out)
		}
		return time.Since(start)
	}
	for _, name := range []string{"turn-per-call", "one-turn"} {
		b.Run(name, func(b *testing.B) {
			var with, without time.Duration
			i := 0
			for b.Loop() {
				i++
				with += run(b, name, i)
				without += run(b, "none", i)
			}
			b.ReportMetric(float64((with-without).Microseconds())/1000/float64(b.N*calls), "ms/toolcall")
		})
	}
}
