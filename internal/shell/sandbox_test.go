//go:build linux

package shell

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/sandbox"
)

// The escape tests: each tries to break the sandbox through the real
// bubblewrap, and a control run with the sandbox off shows that the same
// test catches the escape when nothing confines the command.

var (
	sandboxed = sandbox.Profile{Filesystem: sandbox.WorkspaceWrite}
	readOnly  = sandbox.Profile{Filesystem: sandbox.ReadOnly}
	off       = sandbox.Profile{Mode: sandbox.Off}
)

// escape is one attempt: the command, and how to tell it succeeded.
type escape struct {
	name    string
	command string
	escaped func() bool
}

// unprovable names the attempts whose control may not escape on this
// host, and why: a container that forbids them to root as well.
var unprovable = map[string]string{
	"/proc/1/root":    "this host forbids /proc/1/root to root outside the sandbox too",
	"/proc/1/environ": "this host forbids init's environment to root outside the sandbox too",
}

// tryEscapes runs each attempt under p and under off, in a fresh
// workspace and outside directory for each, and wants every attempt
// blocked under p and every one to succeed under off.
func tryEscapes(t *testing.T, p sandbox.Profile, prepare func(t *testing.T, ws, outside string), attempts func(ws, outside string) []escape) {
	t.Helper()
	for _, profile := range []sandbox.Profile{p, off} {
		root := t.TempDir()
		ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
		os.Mkdir(ws, 0o755)
		os.Mkdir(outside, 0o755)
		if prepare != nil {
			prepare(t, ws, outside)
		}
		r, _ := newRunner(t, Options{Workspace: ws, Sandbox: profile})
		for _, e := range attempts(ws, outside) {
			res, err := r.Run(context.Background(), Request{Command: e.command, Cwd: ".", TimeoutMs: 20000})
			if err != nil {
				t.Fatalf("%s under %s: %v", e.name, profile, err)
			}
			got := e.escaped()
			if profile.Mode == sandbox.Off && !got && unprovable[e.name] != "" {
				t.Logf("control: %s did not escape with the sandbox off: %s", e.name, unprovable[e.name])
			} else if profile.Mode == sandbox.Off && !got {
				t.Errorf("control: %s did not escape with the sandbox off, so the test cannot catch it (stderr %q)", e.name, res.Stderr)
			}
			if profile.Mode != sandbox.Off && got {
				t.Errorf("%s escaped the sandbox %s", e.name, profile)
			}
		}
	}
}

func exists(p string) func() bool {
	return func() bool { _, err := os.Stat(p); return err == nil }
}

func gitInit(t *testing.T, ws, _ string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

func TestSandboxBlocksWritesOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	prepare := func(t *testing.T, ws, outside string) {
		gitInit(t, ws, outside)
		os.WriteFile(filepath.Join(outside, "victim"), []byte("host"), 0o644)
		os.Symlink(outside, filepath.Join(ws, "link"))
	}
	tryEscapes(t, sandboxed, prepare, func(ws, outside string) []escape {
		return []escape{
			{"git log --output", "git log --output=" + outside + "/gitlog", exists(outside + "/gitlog")},
			{"tee", "echo x | tee " + outside + "/tee", exists(outside + "/tee")},
			{"cp", "cp /etc/passwd " + outside + "/cp", exists(outside + "/cp")},
			{"symlink", "echo x > link/symlinked", exists(outside + "/symlinked")},
			{"hard link", "ln " + outside + "/victim hard && echo pwned >> hard", func() bool {
				b, _ := os.ReadFile(outside + "/victim")
				return strings.Contains(string(b), "pwned")
			}},
			{"/proc/self/root", "echo x > /proc/self/root" + outside + "/procroot", exists(outside + "/procroot")},
			{"/proc/1/root", "echo x > /proc/1/root" + outside + "/pid1root", exists(outside + "/pid1root")},
		}
	})
}

func TestSandboxReadOnlyBlocksWritesInTheWorkspace(t *testing.T) {
	t.Parallel()
	tryEscapes(t, readOnly, nil, func(ws, _ string) []escape {
		return []escape{{"touch", "touch made", exists(ws + "/made")}}
	})
}

// TestGitConfigEditThenAllowedGitIsConfined: a model that may edit
// .git/config (core.fsmonitor) and run `git status` gets arbitrary code
// run; under read-only that code can write nothing, inside the workspace
// or out.
func TestGitConfigEditThenAllowedGitIsConfined(t *testing.T) {
	t.Parallel()
	prepare := func(t *testing.T, ws, outside string) {
		gitInit(t, ws, outside)
		// What fs.edit of .git/config writes.
		f, err := os.OpenFile(filepath.Join(ws, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("[core]\n\tfsmonitor = \"touch " + outside + "/fsmon-out " + ws + "/fsmon-in; false\"\n")
		f.Close()
	}
	for _, where := range []string{"out", "in"} {
		tryEscapes(t, readOnly, prepare, func(ws, outside string) []escape {
			target := outside + "/fsmon-out"
			if where == "in" {
				target = ws + "/fsmon-in"
			}
			return []escape{{"git status (core.fsmonitor, " + where + ")", "git status --short", exists(target)}}
		})
	}
}

func TestSandboxHidesTheHostEnvironment(t *testing.T) {
	t.Parallel()
	// /proc/PID/environ holds a process's environment as it started, so
	// the canary is a variable this test process started with (in CI the
	// provider key would be one).
	canary := hostVariable(t)
	tryEscapes(t, sandboxed, nil, func(ws, _ string) []escape {
		leak := func() bool { b, _ := os.ReadFile(ws + "/env"); return strings.Contains(string(b), canary) }
		return []escape{
			{"/proc/$PPID/environ", "cat /proc/$PPID/environ > env", leak},
			{"/proc/1/environ", "cat /proc/1/environ > env; true", leak},
			{"every /proc/*/environ", "cat /proc/[0-9]*/environ > env 2>/dev/null; true", leak},
		}
	})
}

// hostVariable is an entry of this process's starting environment that no
// sandboxed command is given.
func hostVariable(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		name, value, _ := strings.Cut(kv, "=")
		if len(value) >= 4 && name != "PATH" && name != "LANG" && name != "PWD" && name != "HOME" {
			return kv
		}
	}
	t.Skip("the test process started with no environment to look for")
	return ""
}

func TestSandboxReachesNoNetwork(t *testing.T) {
	t.Parallel()
	tryEscapes(t, sandboxed, nil, func(ws, outside string) []escape {
		tcp, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tcp.Close() })
		udp, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { udp.Close() })
		sock := filepath.Join(outside, "docker.sock")
		unix, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close() })
		accepted := func(l net.Listener) func() bool {
			return func() bool {
				switch l := l.(type) {
				case *net.TCPListener:
					l.SetDeadline(time.Now().Add(100 * time.Millisecond))
				case *net.UnixListener:
					l.SetDeadline(time.Now().Add(100 * time.Millisecond))
				}
				c, err := l.Accept()
				if err == nil {
					c.Close()
				}
				return err == nil
			}
		}
		tcpPort := strconv.Itoa(tcp.Addr().(*net.TCPAddr).Port)
		udpPort := strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)
		return []escape{
			{"TCP to a loopback listener", "bash -c 'echo hi > /dev/tcp/127.0.0.1/" + tcpPort + "'; true", accepted(tcp)},
			{"UDP to a loopback listener", "bash -c 'echo hi > /dev/udp/127.0.0.1/" + udpPort + "'; true", func() bool {
				udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				buf := make([]byte, 16)
				_, _, err := udp.ReadFrom(buf)
				return err == nil
			}},
			{"a Unix socket on the host", `perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => "` + sock + `") or exit 1'; true`, accepted(unix)},
		}
	})
}

func TestNothingStartedInsideOutlivesTheCall(t *testing.T) {
	t.Parallel()
	tryEscapes(t, sandboxed, nil, func(ws, _ string) []escape {
		var out []escape
		for i, start := range []string{"setsid -f %s", "( setsid %s & ) &", "nohup setsid %s >/dev/null 2>&1 &"} {
			nap := "3600." + strconv.Itoa(os.Getpid()) + strconv.Itoa(i) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
			flag := ws + "/started" + strconv.Itoa(i)
			// The command waits until the grandchild left its process
			// group, so the control shows it surviving every time.
			cmd := strings.Replace(start, "%s", "/bin/sh -c 'touch "+flag+"; exec sleep "+nap+"' </dev/null >/dev/null 2>&1", 1) +
				"\ni=0; while [ ! -e " + flag + " ] && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done"
			out = append(out, escape{start, cmd, func() bool {
				pids := processesWith(t, nap)
				for _, pid := range pids {
					if p, err := os.FindProcess(pid); err == nil {
						p.Kill()
					}
				}
				return len(pids) > 0
			}})
		}
		return out
	})
}

func TestSandboxHidesRootOnlyFiles(t *testing.T) {
	t.Parallel()
	prepare := func(t *testing.T, _, outside string) {
		if err := os.WriteFile(outside+"/shadow", []byte("root-only-canary"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tryEscapes(t, sandboxed, prepare, func(ws, outside string) []escape {
		return []escape{{"cat a 0600 file", "cat " + outside + "/shadow > read; true", func() bool {
			b, _ := os.ReadFile(ws + "/read")
			return strings.Contains(string(b), "root-only-canary")
		}}}
	})
}

func processesWith(t *testing.T, arg string) []int {
	t.Helper()
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || !strings.Contains(string(b), arg) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(n))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestRequiredSandboxWithoutBubblewrapFailsClosed(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	r, _ := newRunner(t, Options{Workspace: ws, Launcher: sandbox.NewLauncher("/nonexistent/bwrap")})
	for _, call := range []func() error{
		func() error {
			_, err := r.Run(context.Background(), Request{Command: "touch ran", Cwd: "."})
			return err
		},
		func() error {
			d, err := r.DecideContext(context.Background(), Request{Command: "touch ran", Cwd: "."})
			if err == nil && !d.Allowed {
				err = &DeniedError{Decision: d}
			}
			return err
		},
		func() error {
			d, err := r.Decide(Request{Command: "touch ran", Cwd: "."})
			if err == nil && !d.Allowed {
				err = &DeniedError{Decision: d}
			}
			return err
		},
	} {
		err := call()
		var de *DeniedError
		if !errors.As(err, &de) || de.Decision.RuleID != "builtin.sandbox.unavailable" {
			t.Fatalf("got %v; want a builtin.sandbox.unavailable denial", err)
		}
		if errors.Is(err, ErrDenied) && de.Cause != nil && !errors.Is(err, sandbox.ErrUnavailable) {
			t.Fatalf("%v does not reach sandbox.ErrUnavailable", err)
		}
	}
	if _, err := r.Run(context.Background(), Request{Command: "true", Cwd: "."}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Run = %v; want errors.Is(err, sandbox.ErrUnavailable)", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran unconfined")
	}
	// Off is the host's explicit choice and needs no bubblewrap.
	r, _ = newRunner(t, Options{Workspace: ws, Sandbox: off, Launcher: sandbox.NewLauncher("/nonexistent/bwrap")})
	if res, err := r.Run(context.Background(), Request{Command: "printf ok", Cwd: "."}); err != nil || res.Stdout != "ok" {
		t.Fatalf("off: %+v, %v", res, err)
	}
}

func TestSandboxSetupFailureFailsTheCall(t *testing.T) {
	t.Parallel()
	// A read path that does not exist cannot be mounted: bubblewrap fails
	// before the command starts.
	ws := t.TempDir()
	r, _ := newRunner(t, Options{Workspace: ws, Sandbox: sandbox.Profile{ReadPaths: []string{"/nonexistent-read-path"}}})
	_, err := r.Run(context.Background(), Request{Command: "true", Cwd: "."})
	var re *RunError
	if !errors.As(err, &re) || re.Kind != ErrSandbox || re.Status != "spawn_failed" || !errors.Is(err, sandbox.ErrSetup) {
		t.Fatalf("got %v; want an ErrSandbox spawn_failed wrapping sandbox.ErrSetup", err)
	}
}
