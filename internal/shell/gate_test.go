//go:build linux

package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// TestCommandRunsNothingBeforeItsGroupIsRecorded: a shell.run command,
// sandboxed or not, through the shell or executed directly, has not run
// while its process group is being recorded (a slow recorder that waits
// as long as an ungated control takes to run, and more), and runs once
// the recorder returned.
func TestCommandRunsNothingBeforeItsGroupIsRecorded(t *testing.T) {
	t.Parallel()
	policy := mustPolicy(t, Layer{Name: "l", Rules: CommandRules{Default: DefaultAllow}})
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"Sandboxed", Options{Sandbox: sandboxed}},
		{"Off", Options{Sandbox: off}},
		{"DirectExecSandboxed", Options{Sandbox: sandboxed, Policy: policy, DirectExec: true}},
		{"DirectExecOff", Options{Sandbox: off, Policy: policy, DirectExec: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, ws := newRunner(t, tc.opts)
			if err := r.SandboxReady(context.Background()); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(ws, "ran")
			control := filepath.Join(t.TempDir(), "control")
			var ran, recorded bool
			ctx := proc.WithRecorder(context.Background(), func(context.Context, proc.Group) error {
				begin := time.Now()
				if err := exec.Command("/bin/sh", "-c", "touch "+control).Run(); err != nil {
					return err
				}
				// bubblewrap's setup takes a few milliseconds more.
				for until := time.Now().Add(2*time.Since(begin) + 100*time.Millisecond); time.Now().Before(until); time.Sleep(2 * time.Millisecond) {
					if _, err := os.Stat(marker); err == nil {
						ran = true
						break
					}
				}
				recorded = true
				return nil
			})
			res, err := r.Run(ctx, Request{Command: "touch ran", Cwd: ".", TimeoutMs: 20000})
			if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
				t.Fatalf("%+v %v", res, err)
			}
			if !recorded || ran {
				t.Fatalf("recorded %v; the command ran before its group was recorded: %v", recorded, ran)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatal("the command never ran once released")
			}
		})
	}
}
