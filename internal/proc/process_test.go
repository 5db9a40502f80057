//go:build linux

package proc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// sh returns an unstarted /bin/sh -c script command.
func sh(script string) *exec.Cmd {
	return exec.Command("/bin/sh", "-c", script)
}

// requireGroupGone lists /proc for members of pgid and fails on any that is
// still alive. Zombies re-parented to an init that does not reap are logged.
func requireGroupGone(t *testing.T, pgid int) {
	t.Helper()
	members, err := proc.GroupMembers(pgid)
	if err != nil {
		t.Fatalf("GroupMembers(%d): %v", pgid, err)
	}
	for _, m := range members {
		if m.Alive() {
			t.Errorf("process group %d still has live member pid=%d state=%c comm=%q", pgid, m.Pid, m.State, m.Comm)
		} else {
			t.Logf("process group %d keeps zombie pid=%d ppid=%d (its parent does not reap)", pgid, m.Pid, m.PPid)
		}
	}
}

// readyCapture starts script with OnOutput and returns once the script has
// printed "ready" on stdout.
func startReady(t *testing.T, ctx context.Context, script string, opts proc.Options) *proc.Process {
	t.Helper()
	ready := make(chan struct{})
	var once sync.Once
	var seen bytes.Buffer
	opts.OnOutput = func(stream string, chunk []byte) {
		if stream == proc.Stdout {
			seen.Write(chunk)
			if strings.Contains(seen.String(), "ready") {
				once.Do(func() { close(ready) })
			}
		}
	}
	if opts.MaxStdout == 0 {
		opts.MaxStdout = 1 << 16
	}
	p, err := proc.Start(ctx, sh(script), opts)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-p.Done():
		res, err := p.Wait()
		t.Fatalf("process ended before it was ready: %+v %v", res, err)
	}
	return p
}

func TestExitCodeAndCaptureAreReported(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(context.Background(), sh("printf out; printf err >&2; exit 3"), proc.Options{MaxStdout: 100, MaxStderr: 100})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.Signal != "" || string(res.Stdout) != "out" || string(res.Stderr) != "err" || res.End != proc.EndExited {
		t.Fatalf("unexpected result %+v", res)
	}
	requireGroupGone(t, p.Pgid())
}

func TestSignalDeathIsReportedByName(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(context.Background(), sh("kill -TERM $$"), proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != -1 || res.Signal != "SIGTERM" {
		t.Fatalf("want SIGTERM, got %+v", res)
	}
}

func TestCancellationKillsGrandchildren(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := startReady(t, ctx, "sleep 60 & sleep 60 & echo ready; wait", proc.Options{})
	cancel()
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.End != proc.EndCancelled || res.Signal != "SIGKILL" {
		t.Fatalf("want cancelled by SIGKILL, got %+v", res)
	}
	requireGroupGone(t, p.Pgid())
}

func TestProcessIgnoringSIGTERMIsKilled(t *testing.T) {
	t.Parallel()
	p := startReady(t, context.Background(), "trap '' TERM; sh -c \"trap '' TERM; sleep 60\" & echo ready; wait", proc.Options{})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	res, _ := p.Wait()
	if res.End != proc.EndKilled {
		t.Fatalf("want killed, got %v", res.End)
	}
	requireGroupGone(t, p.Pgid())
}

func TestBackgroundChildHoldingPipesIsKilledAtExit(t *testing.T) {
	t.Parallel()
	// The background sleep inherits stdout and stderr; the leader exits at
	// once. Without the group kill the drain would wait 60 s.
	p, err := proc.Start(context.Background(), sh("sleep 60 & echo done"), proc.Options{MaxStdout: 100})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatalf("cleanup should be proven: %v", err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "done\n" {
		t.Fatalf("unexpected result %+v", res)
	}
	requireGroupGone(t, p.Pgid())
}

func TestDoubleForkStaysInGroupAndIsKilled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := startReady(t, ctx, "( sleep 60 & ) & wait; echo ready; sleep 60", proc.Options{})
	// The subshell may exit before its forked child has exec'd sleep, so
	// "ready" can come while the grandchild is still named sh: poll for it.
	var before []proc.Member
	orphan := false
	for deadline := time.Now().Add(10 * time.Second); !orphan; {
		var err error
		if before, err = proc.GroupMembers(p.Pgid()); err != nil {
			t.Fatal(err)
		}
		for _, m := range before {
			if m.Comm == "sleep" && m.PPid != p.Pid() && m.Alive() {
				orphan = true // the double-forked sleep, re-parented away from the leader
			}
		}
		if !orphan && time.Now().After(deadline) {
			t.Fatalf("expected a re-parented sleep in the group, found %+v", before)
		}
		if !orphan {
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancel()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	requireGroupGone(t, p.Pgid())
}

func TestSetsidEscapeIsReportedAsCleanupFailure(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The escaped shell leaves the group with setsid, keeps our stdout open
	// and records its pid so the test can kill it afterwards.
	script := `setsid sh -c 'echo $$ > "$1"; exec sleep 60' sh "$0" & while [ ! -s "$0" ]; do :; done`
	cmd := exec.Command("/bin/sh", "-c", script, pidFile)
	p, err := proc.Start(context.Background(), cmd, proc.Options{CleanupAllowance: 200 * time.Millisecond, MaxStdout: 10})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	b, readErr := os.ReadFile(pidFile)
	if readErr != nil {
		t.Fatal(readErr)
	}
	pid, convErr := strconv.Atoi(strings.TrimSpace(string(b)))
	if convErr != nil {
		t.Fatal(convErr)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	var ce *proc.CleanupError
	if !errors.Is(err, proc.ErrCleanup) || !errors.As(err, &ce) || ce.Problem != "pipes_held_open" {
		t.Fatalf("want pipes_held_open cleanup error, got %v", err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("leader should have exited 0: %+v", res)
	}
	// The group itself is gone: only the escaped session survives.
	requireGroupGone(t, p.Pgid())
}

func TestCaptureBoundBoundaries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		produce   int
		bound     int64
		truncated bool
	}{
		{"below bound", 99, 100, false},
		{"at bound", 100, 100, false},
		{"one past bound", 101, 100, true},
		{"zero bound discards", 1, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("/usr/bin/head", "-c", strconv.Itoa(tc.produce), "/dev/zero")
			p, err := proc.Start(context.Background(), cmd, proc.Options{MaxStdout: tc.bound, StopOnOverflow: true})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if res.StdoutTruncated != tc.truncated || int64(len(res.Stdout)) != min(int64(tc.produce), tc.bound) {
				t.Fatalf("truncated=%v len=%d", res.StdoutTruncated, len(res.Stdout))
			}
			if tc.truncated != (res.End == proc.EndOutputLimit) {
				t.Fatalf("end=%v, truncated=%v", res.End, tc.truncated)
			}
		})
	}
}

func TestOverflowStopsEndlessOutput(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(context.Background(), exec.Command("/usr/bin/yes"), proc.Options{MaxStdout: 1000, StopOnOverflow: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.End != proc.EndOutputLimit || len(res.Stdout) != 1000 || !res.StdoutTruncated {
		t.Fatalf("unexpected result end=%v len=%d", res.End, len(res.Stdout))
	}
	requireGroupGone(t, p.Pgid())
}

func TestOverflowWithoutStopKeepsRunning(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(context.Background(), sh("head -c 5000 /dev/zero; exit 4"), proc.Options{MaxStdout: 10})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.End != proc.EndExited || res.ExitCode != 4 || len(res.Stdout) != 10 || !res.StdoutTruncated {
		t.Fatalf("unexpected result %+v", res)
	}
}

func TestMaxTotalIsSharedByBothStreams(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(context.Background(), sh("printf 123456; printf abcdef >&2"), proc.Options{MaxStdout: 100, MaxStderr: 100, MaxTotal: 10})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout)+len(res.Stderr) != 10 || !(res.StdoutTruncated || res.StderrTruncated) {
		t.Fatalf("unexpected result %+v", res)
	}
}

func TestStreamedChunksEqualCapturedOutput(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]*bytes.Buffer{proc.Stdout: {}, proc.Stderr: {}}
	maxChunk := 0
	opts := proc.Options{
		MaxStdout: 50000, MaxStderr: 50000, MaxTotal: 90000, ChunkBytes: 1000,
		OnOutput: func(stream string, chunk []byte) {
			mu.Lock()
			defer mu.Unlock()
			got[stream].Write(chunk)
			maxChunk = max(maxChunk, len(chunk))
		},
	}
	p, err := proc.Start(context.Background(), sh("seq 1 20000; seq 1 5000 >&2; echo tail"), opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Equal(got[proc.Stdout].Bytes(), res.Stdout) || !bytes.Equal(got[proc.Stderr].Bytes(), res.Stderr) {
		t.Fatalf("streamed output differs from captured output: %d/%d vs %d/%d",
			got[proc.Stdout].Len(), got[proc.Stderr].Len(), len(res.Stdout), len(res.Stderr))
	}
	if maxChunk > 1000 {
		t.Fatalf("chunk of %d bytes exceeds ChunkBytes", maxChunk)
	}
	if !res.StdoutTruncated {
		t.Fatalf("stdout should be truncated at 50000 bytes, got %d", len(res.Stdout))
	}
}

func TestPipesServeProtocolUse(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(context.Background(), exec.Command("/usr/bin/cat"), proc.Options{PipeStdin: true, PipeStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.Stdin(), "hello\n"); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 6)
	if _, err := io.ReadFull(p.Stdout(), line); err != nil || string(line) != "hello\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if err := p.Stdin().Close(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(p.Stdout())
	if err != nil || len(rest) != 0 {
		t.Fatalf("read rest %q, %v", rest, err)
	}
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.End != proc.EndExited {
		t.Fatalf("unexpected result %+v", res)
	}
	requireGroupGone(t, p.Pgid())
}

func TestCloseEndsLongLivedProtocolProcess(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(context.Background(), exec.Command("/usr/bin/cat"), proc.Options{PipeStdin: true, PipeStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stdout().Read(make([]byte, 1)); err == nil {
		t.Fatal("stdout should be closed after Close")
	}
	res, _ := p.Wait()
	if res.Signal != "SIGKILL" || res.End != proc.EndKilled {
		t.Fatalf("unexpected result %+v", res)
	}
}

func TestStartRejectsWhatWouldBreakOwnership(t *testing.T) {
	t.Parallel()
	withStdout := sh("true")
	withStdout.Stdout = io.Discard
	withTerminal := sh("true")
	withTerminal.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	started := sh("true")
	if err := started.Run(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cmd  *exec.Cmd
		opts proc.Options
	}{
		{"nil command", nil, proc.Options{}},
		{"caller-owned stdout", withStdout, proc.Options{}},
		{"setctty takes a terminal", withTerminal, proc.Options{}},
		{"already started", started, proc.Options{}},
		{"negative allowance", sh("true"), proc.Options{CleanupAllowance: -1}},
		{"negative bound", sh("true"), proc.Options{MaxStdout: -1}},
	}
	for _, tc := range cases {
		if _, err := proc.Start(context.Background(), tc.cmd, tc.opts); !errors.Is(err, proc.ErrInvalidOptions) {
			t.Errorf("%s: want ErrInvalidOptions, got %v", tc.name, err)
		}
	}
}

func TestStartFailureIsTyped(t *testing.T) {
	t.Parallel()
	_, err := proc.Start(context.Background(), exec.Command("/nonexistent/program"), proc.Options{})
	var se *proc.StartError
	if !errors.Is(err, proc.ErrStart) || !errors.As(err, &se) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want StartError wrapping ErrNotExist, got %v", err)
	}
}

func TestDoneContextRefusesStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := proc.Start(ctx, sh("true"), proc.Options{}); !errors.Is(err, context.Canceled) || !errors.Is(err, proc.ErrStart) {
		t.Fatalf("want ErrStart wrapping context.Canceled, got %v", err)
	}
}
