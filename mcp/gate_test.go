//go:build linux

package mcp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/internal/sandbox"
)

// TestStdioServerRunsNothingBeforeItsGroupIsRecorded: a stdio server does
// its startup work at exec, before any request reaches it (a daemon it
// forks, a file it writes); sandboxed or not, it has not started while its
// process group is being recorded (a slow recorder that waits as long as an
// ungated control takes to run, and more), and serves once released.
func TestStdioServerRunsNothingBeforeItsGroupIsRecorded(t *testing.T) {
	t.Parallel()
	for _, sb := range []Sandbox{{Filesystem: sandbox.WorkspaceWrite}, {Mode: sandbox.Off}} {
		t.Run(string(sb.Normalized().Mode), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := filepath.Join(dir, "started")
			srv := faultStdio(t, "gated", "ok", "-mark", marker)
			srv.Sandbox, srv.Dir = sb, dir
			control := filepath.Join(t.TempDir(), "control")
			var ran, recorded bool
			ctx := proc.WithRecorder(context.Background(), func(context.Context, proc.Group) error {
				begin := time.Now()
				if err := exec.Command("/bin/sh", "-c", "touch "+control).Run(); err != nil {
					return err
				}
				for until := time.Now().Add(2*time.Since(begin) + 150*time.Millisecond); time.Now().Before(until); time.Sleep(2 * time.Millisecond) {
					if _, err := os.Stat(marker); err == nil {
						ran = true
						break
					}
				}
				recorded = true
				return nil
			})
			c, err := Open(ctx, Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !recorded || ran {
				t.Fatalf("recorded %v; the server started before its group was recorded: %v", recorded, ran)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatal("the server never started once released")
			}
		})
	}
}
