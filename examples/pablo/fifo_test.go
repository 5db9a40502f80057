//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLINeverBlocksOnAFIFO: --config, --script and --store naming a FIFO
// (a model with a shell can plant one in the workspace) fail at once with
// exit 2 and a reason, under a context deadline, instead of blocking in
// open(2) where neither the deadline nor SIGINT could reach.
func TestCLINeverBlocksOnAFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["done"]}]}`), 0o600)
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.shell]\nenabled = false\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n"), 0o600)
	for _, args := range [][]string{
		{"config", "validate", "--config", fifo, "--bind", "workspace=" + ws},
		{"run", "x", "--config", fifo, "--bind", "workspace=" + ws},
		{"run", "x", "--config", cfg, "--bind", "workspace=" + ws, "--script", fifo},
		{"run", "x", "--config", cfg, "--bind", "workspace=" + ws, "--store", fifo},
	} {
		t.Run(strings.Join(args[:2], " ")+" "+args[len(args)-2], func(t *testing.T) {
			t.Parallel()
			// A deadline the CLI would honour everywhere but in a blocked
			// open(2): long enough that a loaded host reaches the FIFO
			// before it, so the answer is the FIFO's, not the deadline's.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan struct{})
			var code int
			var stderr bytes.Buffer
			go func() {
				defer close(done)
				code = run(ctx, args, &host{stdout: &bytes.Buffer{}, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir})
			}()
			guard := time.NewTimer(60 * time.Second)
			defer guard.Stop()
			select {
			case <-done:
			case <-guard.C:
				t.Fatal("the CLI blocked on a FIFO")
			}
			if code != 2 || !strings.Contains(stderr.String(), "regular file") {
				t.Fatalf("exit %d, stderr %s", code, stderr.String())
			}
		})
	}
}

// TestCancelledCLIReadsNoDeployment: the signal context reaches the
// deployment load, so SIGINT/SIGTERM (which cancel it in main) stop the CLI
// while it reads its inputs.
func TestCancelledCLIReadsNoDeployment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n"), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stderr bytes.Buffer
	code := run(ctx, []string{"config", "validate", "--config", cfg, "--bind", "workspace=" + dir}, &host{stdout: &bytes.Buffer{}, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir})
	if code == 0 || !strings.Contains(stderr.String(), "cancelled") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}
