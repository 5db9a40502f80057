//go:build linux

package shell

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/internal/sandbox"
)

func newRunner(t *testing.T, opts Options) (*Runner, string) {
	t.Helper()
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, r.workspace
}

func productionPolicy(t *testing.T) *Policy {
	return mustPolicy(t, productionLayers()...)
}

func intp(i int) *int { return &i }

func TestRunReportsExitCodeAndOutput(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	res, err := r.Run(context.Background(), Request{Command: "printf hello; printf oops >&2; exit 3", Cwd: "."})
	if err != nil {
		t.Fatal(err)
	}
	want := &ShellResult{Stdout: "hello", Stderr: "oops", ExitCode: intp(3)}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("got %+v", res)
	}
}

func TestRunWithoutPolicyUsesTheShell(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	res, err := r.Run(context.Background(), Request{Command: "printf hello | tr a-z A-Z", Cwd: "."})
	if err != nil || res.Stdout != "HELLO" {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestPolicyDispatchInterpretsNothingTwice(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{Policy: productionPolicy(t)})
	res, err := r.Run(context.Background(), Request{Command: `/usr/bin/printf '%s|%s|%s' 'a b' '$(id)' "\$HOME"`, Cwd: "."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "a b|$(id)|$HOME" || *res.ExitCode != 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestPolicyDenialStopsBeforeLaunch(t *testing.T) {
	t.Parallel()
	r, ws := newRunner(t, Options{Policy: productionPolicy(t)})
	marker := filepath.Join(ws, "marker")
	for _, cmd := range []string{"/usr/bin/touch " + marker, "printf x | /usr/bin/touch " + marker, "env"} {
		res, err := r.Run(context.Background(), Request{Command: cmd, Cwd: "."})
		var de *DeniedError
		if res != nil || !errors.As(err, &de) || !errors.Is(err, ErrDenied) {
			t.Fatalf("%q: want a denial, got %+v, %v", cmd, res, err)
		}
		if strings.Contains(err.Error(), cmd) {
			t.Fatalf("denial echoes the command: %v", err)
		}
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a denied command ran")
	}
}

func TestEnvironmentIsOnlyPathLangAndAdmittedNames(t *testing.T) {
	t.Parallel()
	for _, sb := range []sandbox.Profile{{Mode: sandbox.Off}, {}} {
		r, ws := newRunner(t, Options{Sandbox: sb, Environment: Environment{
			Values:       map[string]string{"PABLO_TASK_BASE": "base", "PABLO_TASK_LABEL": "config"},
			AllowedNames: []string{"PABLO_TASK_LABEL"},
		}})
		res, err := r.Run(context.Background(), Request{Command: "/usr/bin/env", Cwd: ".", Env: map[string]string{"PABLO_TASK_LABEL": "docs"}})
		if err != nil {
			t.Fatal(err)
		}
		// The shell itself sets PWD to the working directory (POSIX); Pablo
		// passes nothing else, but for the sandbox's private HOME.
		got := strings.Fields(res.Stdout)
		slices.Sort(got)
		want := []string{"LANG=C", "PABLO_TASK_BASE=base", "PABLO_TASK_LABEL=docs", "PATH=/usr/bin:/bin", "PWD=" + ws}
		if sb.Mode != sandbox.Off {
			want = append([]string{"HOME=" + sandbox.Home}, want...)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: environment %q, want %q", sb, got, want)
		}
	}
}

func TestEnvironmentAdmission(t *testing.T) {
	t.Parallel()
	names := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m["PABLO_TASK_N"+strconv.Itoa(i)] = "v"
		}
		return m
	}
	cases := []struct {
		name  string
		env   Environment
		req   map[string]string
		admit bool
	}{
		{"no additions", Environment{}, nil, true},
		{"empty allowed_names admits none", Environment{}, map[string]string{"PABLO_TASK_X": "1"}, false},
		{"listed name", Environment{AllowedNames: []string{"PABLO_TASK_X"}}, map[string]string{"PABLO_TASK_X": "1"}, true},
		{"unlisted name", Environment{AllowedNames: []string{"PABLO_TASK_X"}}, map[string]string{"PABLO_TASK_Y": "1"}, false},
		{"any name", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_Y": "1"}, true},
		{"foreign name", Environment{AllowAnyName: true}, map[string]string{"HOME": "/root"}, false},
		{"prefix alone", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_": "1"}, false},
		{"bad character", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_A-B": "1"}, false},
		{"name of 128 bytes", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_" + strings.Repeat("A", 117): "1"}, true},
		{"name of 129 bytes", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_" + strings.Repeat("A", 118): "1"}, false},
		{"value of 8192 bytes", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_X": strings.Repeat("v", 8192)}, true},
		{"value of 8193 bytes", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_X": strings.Repeat("v", 8193)}, false},
		{"value with NUL", Environment{AllowAnyName: true}, map[string]string{"PABLO_TASK_X": "a\x00"}, false},
		{"32 names", Environment{AllowAnyName: true}, names(32), true},
		{"33 names", Environment{AllowAnyName: true}, names(33), false},
		{"32 names with config values", Environment{AllowAnyName: true, Values: map[string]string{"PABLO_TASK_N0": "c"}}, names(32), true},
		{"33 names with config values", Environment{AllowAnyName: true, Values: map[string]string{"PABLO_TASK_C": "c"}}, names(32), false},
	}
	for _, c := range cases {
		r, _ := newRunner(t, Options{Environment: c.env})
		_, err := r.Run(context.Background(), Request{Command: "true", Cwd: ".", Env: c.req})
		var de *DeniedError
		denied := errors.As(err, &de) && de.Decision.RuleID == "builtin.environment"
		if c.admit != (err == nil) || (!c.admit && !denied) {
			t.Errorf("%s: admit=%v, got %v", c.name, c.admit, err)
		}
	}
}

func TestCwdStaysInsideTheWorkspace(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	var seen []string
	var mu sync.Mutex
	r, ws := newRunner(t, Options{CheckCwd: func(rel string) Decision {
		mu.Lock()
		seen = append(seen, rel)
		mu.Unlock()
		if rel == "private" {
			return Decision{Layer: "options", RuleID: "deny.private"}
		}
		return Decision{Allowed: true}
	}})
	for _, d := range []string{"sub/deeper", "private"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/deeper", filepath.Join(ws, "inside")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cwd  string
		pwd  string // expected output of pwd, relative to ws
		rule string // expected denial rule
		arg  bool   // expected ArgumentError
	}{
		{cwd: ".", pwd: "."},
		{cwd: "sub", pwd: "sub"},
		{cwd: "sub/../sub/deeper", pwd: "sub/deeper"},
		{cwd: "inside", pwd: "sub/deeper"},
		{cwd: filepath.Join(ws, "sub"), pwd: "sub"},
		{cwd: "..", rule: "builtin.workspace"},
		{cwd: "../x", rule: "builtin.workspace"},
		{cwd: outside, rule: "builtin.workspace"},
		{cwd: "escape", rule: "builtin.symlink"},
		{cwd: "private", rule: "deny.private"},
		{cwd: "missing", arg: true},
		{cwd: "file", arg: true},
	}
	for _, c := range cases {
		res, err := r.Run(context.Background(), Request{Command: "pwd -P", Cwd: c.cwd})
		var de *DeniedError
		switch {
		case c.rule != "":
			if !errors.As(err, &de) || de.Decision.RuleID != c.rule {
				t.Errorf("cwd %q: want denial %s, got %v", c.cwd, c.rule, err)
			}
		case c.arg:
			if !errors.Is(err, ErrInvalidArguments) {
				t.Errorf("cwd %q: want ErrInvalidArguments, got %v", c.cwd, err)
			}
		default:
			if err != nil {
				t.Errorf("cwd %q: %v", c.cwd, err)
				continue
			}
			if got := strings.TrimSpace(res.Stdout); got != filepath.Join(ws, c.pwd) {
				t.Errorf("cwd %q: ran in %s", c.cwd, got)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(seen, []string{".", "sub", "sub/deeper", "sub/deeper", "sub", "private"}) {
		t.Errorf("cwd_roots saw %q", seen)
	}
}

func TestArgumentsAreValidated(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	for _, req := range []Request{
		{Cwd: "."},
		{Command: "true"},
		{Command: "a\x00b", Cwd: "."},
		{Command: "true", Cwd: ".", TimeoutMs: -1},
		{Command: "true", Cwd: ".", MaxOutputBytes: -1},
	} {
		var ae *ArgumentError
		if _, err := r.Run(context.Background(), req); !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("%+v: want ArgumentError, got %v", req, err)
		}
	}
	for _, opts := range []Options{{}, {Workspace: "/no/such/workspace"}, {Workspace: ".", MaxOutputBytes: -1}} {
		if _, err := New(opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New(%+v): want ErrInvalidOptions, got %v", opts, err)
		}
	}
}

func TestUnsupportedPlatformIsDenied(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	r.supported = false
	_, err := r.Run(context.Background(), Request{Command: "true", Cwd: "."})
	var de *DeniedError
	if !errors.As(err, &de) || de.Decision.RuleID != "builtin.unsupported_platform" || de.Decision.Reason != "unsupported_platform" {
		t.Fatalf("got %v", err)
	}
}

func TestSignalIsReported(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{Sandbox: sandbox.Profile{Mode: sandbox.Off}})
	res, err := r.Run(context.Background(), Request{Command: "kill -KILL $$", Cwd: "."})
	if err != nil || res.ExitCode != nil || res.Signal == nil || *res.Signal != "SIGKILL" {
		t.Fatalf("got %+v, %v", res, err)
	}
	// Inside the sandbox bubblewrap's init reports the signal as a shell
	// does: exit code 128+N.
	r, _ = newRunner(t, Options{})
	res, err = r.Run(context.Background(), Request{Command: "kill -KILL $$", Cwd: "."})
	if err != nil || res.ExitCode == nil || *res.ExitCode != 128+9 || res.Signal != nil {
		t.Fatalf("sandboxed: got %+v, %v", res, err)
	}
}

func TestStdinIsClosed(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	res, err := r.Run(context.Background(), Request{Command: "/usr/bin/cat", Cwd: ".", TimeoutMs: 10000})
	if err != nil || res.Stdout != "" || *res.ExitCode != 0 {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestTimeoutKillsTheCommand(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	res, err := r.Run(context.Background(), Request{Command: "sleep 60", Cwd: ".", TimeoutMs: 50})
	var re *RunError
	if !errors.Is(err, ErrTimeout) || !errors.As(err, &re) || re.Status != "timed_out" {
		t.Fatalf("want timeout, got %v", err)
	}
	if res == nil || res.Signal == nil || *res.Signal != "SIGKILL" {
		t.Fatalf("got %+v", res)
	}
}

// TestNoProcessOfACancelledCommandSurvives cancels a command that forked
// grandchildren, a double fork and a SIGTERM-ignoring child, then lists its
// process group.
func TestNoProcessOfACancelledCommandSurvives(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var out bytes.Buffer
	pgid := make(chan int, 1)
	script := `sleep 60 & ( sleep 60 & ) & sh -c "trap '' TERM; sleep 60" & echo ready $$; wait`
	res, err := r.Run(ctx, Request{Command: script, Cwd: ".", OnOutput: func(stream string, chunk []byte) {
		mu.Lock()
		defer mu.Unlock()
		out.Write(chunk)
		if f := strings.Fields(out.String()); len(f) == 2 && f[0] == "ready" && strings.HasSuffix(out.String(), "\n") {
			id, _ := strconv.Atoi(f[1])
			pgid <- id
			cancel()
		}
	}})
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want cancelled, got %+v, %v", res, err)
	}
	id := <-pgid
	members, err := proc.GroupMembers(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if m.Alive() {
			t.Errorf("process group %d still has live member %d (%s)", id, m.Pid, m.Comm)
		}
	}
}

func TestOutputBoundAtAndPastTheLimit(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	res, err := r.Run(context.Background(), Request{Command: "head -c 1024 /dev/zero | tr '\\0' a", Cwd: ".", MaxOutputBytes: 1024})
	if err != nil || len(res.Stdout) != 1024 || res.StdoutTruncated {
		t.Fatalf("at the bound: %v, %d bytes", err, len(res.Stdout))
	}
	res, err = r.Run(context.Background(), Request{Command: "head -c 1025 /dev/zero | tr '\\0' a", Cwd: ".", MaxOutputBytes: 1024})
	var re *RunError
	if !errors.Is(err, ErrOutputLimit) || !errors.As(err, &re) || re.Status != "output_limit" || len(res.Stdout) != 1024 || !res.StdoutTruncated {
		t.Fatalf("one past the bound: %v, %+v", err, res)
	}
	// The host bound applies when the request asks for more, and bounds
	// stdout and stderr together.
	small, _ := newRunner(t, Options{MaxOutputBytes: 10})
	res, err = small.Run(context.Background(), Request{Command: "printf 123456; printf 123456 >&2", Cwd: ".", MaxOutputBytes: 1 << 20})
	if !errors.Is(err, ErrOutputLimit) || len(res.Stdout)+len(res.Stderr) != 10 {
		t.Fatalf("host bound: %v, %+v", err, res)
	}
	// Endless output is stopped.
	res, err = r.Run(context.Background(), Request{Command: "yes", Cwd: ".", MaxOutputBytes: 4096})
	if !errors.Is(err, ErrOutputLimit) || len(res.Stdout) != 4096 {
		t.Fatalf("endless output: %v", err)
	}
}

func TestNonUTF8OutputIsMarkedLossy(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	res, err := r.Run(context.Background(), Request{Command: `printf 'a\377b'; printf 'ok' >&2`, Cwd: "."})
	if err != nil || res.Stdout != "a\uFFFDb" || !res.StdoutLossy || res.StderrLossy || res.Stderr != "ok" {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestStreamedRunEqualsUnstreamedRun(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{Policy: mustPolicy(t, Layer{Name: "l", Rules: CommandRules{Default: DefaultAllow}})})
	req := Request{Command: "seq 1 30000", Cwd: ".", MaxOutputBytes: 1 << 20}
	plain, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var streamed bytes.Buffer
	chunks, biggest := 0, 0
	req.OnOutput = func(stream string, chunk []byte) {
		mu.Lock()
		defer mu.Unlock()
		if stream == proc.Stdout {
			streamed.Write(chunk)
		}
		chunks++
		biggest = max(biggest, len(chunk))
	}
	got, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(got, plain) || streamed.String() != plain.Stdout {
		t.Fatalf("streamed result differs: %d vs %d bytes", len(got.Stdout), len(plain.Stdout))
	}
	if biggest > proc.DefaultChunkBytes || chunks < len(plain.Stdout)/proc.DefaultChunkBytes {
		t.Fatalf("chunks: %d, biggest %d", chunks, biggest)
	}
}

func TestShellResultJSONNames(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, Options{})
	res, err := r.Run(context.Background(), Request{Command: "printf x", Cwd: "."})
	if err != nil {
		t.Fatal(err)
	}
	b, err := jsonMarshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"stdout":"x","stderr":"","exit_code":0,"signal":null,"stdout_truncated":false,"stderr_truncated":false,"stdout_lossy":false,"stderr_lossy":false}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
}

func TestDirectExecRunsTheResolvedProgramWithoutTheShell(t *testing.T) {
	t.Parallel()
	policy := mustPolicy(t, Layer{Name: "l", Rules: CommandRules{Default: DefaultAllow}})
	for _, sb := range []sandbox.Profile{{Mode: sandbox.Off}, {}} {
		r, ws := newRunner(t, Options{Policy: policy, DirectExec: true, Sandbox: sb})
		res, err := r.Run(context.Background(), Request{Command: `printf '%s|%s' 'a b' '$(id)'`, Cwd: "."})
		if err != nil || res.Stdout != "a b|$(id)" {
			t.Fatalf("got %+v, %v", res, err)
		}
		res, err = r.Run(context.Background(), Request{Command: "env", Cwd: "."})
		want := "PATH=/usr/bin:/bin\nLANG=C\n"
		if sb.Mode != sandbox.Off {
			// bubblewrap adds the private HOME and sets PWD.
			want += "HOME=" + sandbox.Home + "\nPWD=" + ws + "\n"
		}
		if err != nil || res.Stdout != want {
			t.Fatalf("%s: direct exec must pass exactly PATH and LANG: %+v, %v", sb, res, err)
		}
	}
}
