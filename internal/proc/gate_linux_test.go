package proc_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// ranWhileRecording is a slow recorder: it holds the start until an
// ungated control command started at the same moment has run and as long
// again has passed, and reports whether marker appeared meanwhile, which
// is whether the gated command ran before its group was recorded.
func ranWhileRecording(t *testing.T, marker string, ran *bool) proc.Recorder {
	t.Helper()
	control := filepath.Join(t.TempDir(), "control")
	return func(context.Context, proc.Group) error {
		begin := time.Now()
		if err := exec.Command("/bin/sh", "-c", "touch "+control).Run(); err != nil {
			return err
		}
		until := time.Now().Add(time.Since(begin) + 50*time.Millisecond)
		for {
			if _, err := os.Stat(marker); err == nil {
				*ran = true
				return nil
			}
			if time.Now().After(until) {
				return nil
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// TestCommandRunsNothingBeforeItsGroupIsRecorded: under a recorder, the
// gate shell holds the command until the recorder returned; it runs once
// released.
func TestCommandRunsNothingBeforeItsGroupIsRecorded(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	var ran bool
	ctx := proc.WithRecorder(context.Background(), ranWhileRecording(t, marker, &ran))
	p, err := proc.Start(ctx, exec.Command("/usr/bin/touch", marker), proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("wait: %+v %v", res, err)
	}
	if ran {
		t.Fatal("the command ran before its group was recorded")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the command never ran once released: %v", err)
	}
}

// TestUnrecordedCommandNeverRuns: when the recorder refuses the group, the
// gate never opens and the command has not run.
func TestUnrecordedCommandNeverRuns(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	refused := errors.New("store down")
	ctx := proc.WithRecorder(context.Background(), func(context.Context, proc.Group) error { return refused })
	if _, err := proc.Start(ctx, exec.Command("/usr/bin/touch", marker), proc.Options{}); !errors.Is(err, refused) {
		t.Fatalf("start: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an unrecorded command ran")
	}
}

// TestGateShellKeepsTheEnvironmentAndArguments: the command the gate shell
// executes sees its environment exactly as given (the shell's own PWD,
// IFS, OPTIND and PPID neither added nor reset), its arguments unsplit
// and its stdin; the gate's descriptor is closed.
func TestGateShellKeepsTheEnvironmentAndArguments(t *testing.T) {
	t.Parallel()
	record := proc.WithRecorder(context.Background(), func(context.Context, proc.Group) error { return nil })
	// What descriptors a command has without a gate (this test process may
	// have inherited some without close-on-exec).
	out, err := exec.Command("/bin/sh", "-c", "ls /proc/self/fd | grep -c .").Output()
	if err != nil {
		t.Fatal(err)
	}
	ungated := strings.TrimSpace(string(out))
	for _, env := range [][]string{
		{},
		{"A=", "B=two words\nand a line", "IFS=:", "OPTIND=7", "PPID=x", "PWD=/nowhere", "_=u", "HOME=/h"},
		{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "V=\xff\x01$(touch x)`y`*"},
	} {
		cmd := exec.Command("/bin/sh", "-c", `printf '%s\0' "$0" "$@"; cat; ls /proc/self/fd | grep -c .; env -0`, "zero", "a b", "", "*")
		cmd.Path = "/bin/sh"
		cmd.Env = env
		cmd.Dir = "/"
		p, err := proc.Start(record, cmd, proc.Options{PipeStdin: true, MaxStdout: 1 << 16, MaxStderr: 1 << 12})
		if err != nil {
			t.Fatal(err)
		}
		p.Stdin().Write([]byte("stdin\x00"))
		p.Stdin().Close()
		res, err := p.Wait()
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%+v %v %s", res, err, res.Stderr)
		}
		parts := strings.Split(string(res.Stdout), "\x00")
		if !slices.Equal(parts[:5], []string{"zero", "a b", "", "*", "stdin"}) {
			t.Fatalf("arguments or stdin %q", parts[:5])
		}
		fds, rest, _ := strings.Cut(parts[5], "\n")
		if fds != ungated {
			t.Fatalf("descriptors open in the command: %s, without the gate %s", fds, ungated)
		}
		got := append([]string{rest}, parts[6:len(parts)-1]...)
		// dash, the command here, adds PWD and resets its own variables as
		// it always does; what it was given is what env sees of the rest.
		want := slices.Clone(env)
		got = slices.DeleteFunc(got, func(kv string) bool { return shellOwn(kv) })
		want = slices.DeleteFunc(want, func(kv string) bool { return shellOwn(kv) })
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("environment\n got %q\nwant %q", got, want)
		}
	}
	// A program that is not a shell sees the shell's variables as given.
	for _, env := range [][]string{{}, {"IFS=:", "OPTIND=7", "PPID=x", "PWD=/nowhere"}} {
		cmd := exec.Command("/usr/bin/env", "-0")
		cmd.Env = env
		cmd.Dir = "/"
		p, err := proc.Start(record, cmd, proc.Options{MaxStdout: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		res, _ := p.Wait()
		got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00")
		if len(env) == 0 {
			got = slices.DeleteFunc(got, func(s string) bool { return s == "" })
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(env))
		if !slices.Equal(got, want) {
			t.Fatalf("environment of env\n got %q\nwant %q", got, want)
		}
	}
}

// shellOwn reports whether kv is one of the variables dash sets itself.
func shellOwn(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	return name == "PWD" || name == "IFS" || name == "OPTIND" || name == "PPID"
}

// TestGateShellRefusesAnEnvironmentItWouldChange: an entry the shell would
// drop (no '=', a name that is not a shell name) or a name of the gate's
// own is refused before anything starts, with its name only.
func TestGateShellRefusesAnEnvironmentItWouldChange(t *testing.T) {
	t.Parallel()
	record := proc.WithRecorder(context.Background(), func(context.Context, proc.Group) error {
		t.Error("a refused command was started")
		return nil
	})
	for _, kv := range []string{"1X=secret-value", "A-B=secret-value", "=secret-value", "noequals", "__pablo_gate_line=secret-value"} {
		cmd := exec.Command("/usr/bin/true")
		cmd.Env = []string{"PATH=/bin", kv}
		_, err := proc.Start(record, cmd, proc.Options{})
		if !errors.Is(err, proc.ErrInvalidOptions) || strings.Contains(err.Error(), "secret-value") {
			t.Fatalf("%q: %v", kv, err)
		}
	}
	// Without a recorder there is no gate, and nothing to refuse.
	cmd := exec.Command("/usr/bin/true")
	cmd.Env = []string{"1X=y"}
	p, err := proc.Start(context.Background(), cmd, proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
}
