package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/proc"
)

// needBwrap returns a ready launcher, or fails: the sandbox tests run
// through the real bubblewrap (scripts/install-peers.sh installs it).
func needBwrap(t testing.TB) *Launcher {
	t.Helper()
	l := NewLauncher("")
	if err := l.Ready(context.Background()); err != nil {
		t.Fatalf("bubblewrap is needed for the sandbox tests: %v", err)
	}
	return l
}

// run runs script with /bin/sh under p over ws and returns stdout, stderr,
// the exit code and the setup error.
func run(t testing.TB, l *Launcher, p Profile, ws, script string, env ...string) (string, string, int, error) {
	t.Helper()
	c, err := l.Command(p, Spec{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", script}, Env: append([]string{"PATH=/usr/bin:/bin"}, env...), Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := c.Start(context.Background(), proc.Options{MaxStdout: 1 << 16, MaxStderr: 1 << 16})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	res, err := pr.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout), string(res.Stderr), res.ExitCode, c.Finish(res.Stderr)
}

func TestSandboxRunsAsAnUnprivilegedUserWithAPrivateHomeAndTmp(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	ws := t.TempDir()
	out, errOut, code, err := run(t, l, Profile{Filesystem: WorkspaceWrite}, ws,
		`id -u; id -g; echo "$HOME"; touch "$HOME/cache" /tmp/scratch && echo home-and-tmp-writable; grep -c . /proc/self/status >/dev/null; grep CapEff /proc/self/status`)
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, stderr %q", code, err, errOut)
	}
	want := "65534\n65534\n" + Home + "\nhome-and-tmp-writable\nCapEff:\t0000000000000000\n"
	if out != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
}

func TestSandboxExitCodePassesThrough(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	_, _, code, err := run(t, l, Profile{}, t.TempDir(), "exit 7")
	if err != nil || code != 7 {
		t.Fatalf("code %d, err %v; want 7 and no setup error", code, err)
	}
}

func TestSandboxSetupFailureIsTypedAndTheCommandNeverRuns(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	ws := t.TempDir()
	// A read path that does not exist cannot be mounted.
	_, _, code, err := run(t, l, Profile{ReadPaths: []string{filepath.Join(ws, "missing")}}, ws, "touch ran")
	var se *SetupError
	if !errors.As(err, &se) || !errors.Is(err, ErrSetup) || code == 0 {
		t.Fatalf("code %d, err %v; want a *SetupError", code, err)
	}
	if !strings.Contains(se.Detail, "bwrap: ") {
		t.Errorf("detail %q does not carry bubblewrap's message", se.Detail)
	}
}

func TestMissingBubblewrapFailsClosed(t *testing.T) {
	t.Parallel()
	l := NewLauncher("/nonexistent/bwrap")
	err := l.Ready(context.Background())
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) || ue.Reason != NotInstalled {
		t.Fatalf("Ready = %v; want an *UnavailableError not_installed", err)
	}
	if !strings.Contains(err.Error(), "apt-get install bubblewrap") || !strings.Contains(err.Error(), `mode = "off"`) {
		t.Errorf("message %q does not say how to install or opt out", err)
	}
	if _, err := l.Command(Profile{}, Spec{Path: "/bin/true", Args: []string{"/bin/true"}, Workspace: t.TempDir()}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Command = %v; want ErrUnavailable, never an unconfined command", err)
	}
	// So does a host that gave no launcher at all.
	var none *Launcher
	if c, err := none.Command(Profile{}, Spec{Path: "/bin/true", Args: []string{"/bin/true"}, Workspace: t.TempDir()}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Command of no launcher = %+v, %v; want ErrUnavailable, never an unconfined command", c, err)
	}
	// Off is the host's explicit choice, and needs no bubblewrap.
	c, err := l.Command(Profile{Mode: Off}, Spec{Path: "/bin/true", Args: []string{"/bin/true"}, Workspace: "/"})
	if err != nil || c.Cmd.Path != "/bin/true" {
		t.Fatalf("off: %v, %+v", err, c)
	}
}

func TestRelativeLauncherIsRefused(t *testing.T) {
	t.Parallel()
	if err := NewLauncher("bwrap").Ready(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ready = %v; want ErrUnavailable (no PATH search)", err)
	}
}

func TestNoFSShowsNoHostFile(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "secret.txt"), []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code, err := run(t, l, Profile{Filesystem: NoFS}, ws, `pwd; ls -A; cat secret.txt 2>/dev/null || echo unreadable; touch made && echo private-writable`)
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, stderr %q", code, err, errOut)
	}
	if want := ws + "\nunreadable\nprivate-writable\n"; out != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err == nil {
		t.Fatal("a file made under no-fs reached the host")
	}
}

// TestProbeBlocksEveryCanaryAndCatchesThemAllWhenOff: every canary of
// Probe is blocked in the sandbox, and the control run unconfined catches
// each one.
func TestProbeBlocksEveryCanaryAndCatchesThemAllWhenOff(t *testing.T) {
	l := needBwrap(t)
	t.Setenv("PABLO_TEST_HOST_SECRET", "host-environment-canary")
	for _, tc := range []struct {
		p       Profile
		blocked bool
	}{{Profile{}, true}, {Profile{Filesystem: WorkspaceWrite}, true}, {Profile{Mode: Off}, false}} {
		got, err := Probe(context.Background(), l, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 7 {
			t.Fatalf("%s: %d canaries, want 7", tc.p, len(got))
		}
		for _, c := range got {
			if !tc.blocked && c.Name == "type_into_terminal" && strings.Contains(c.Detail, "EIO") {
				// The kernel refuses TIOCSTI to everyone
				// (dev.tty.legacy_tiocsti = 0): the control cannot type.
				continue
			}
			if c.Blocked != tc.blocked || c.Skipped {
				t.Errorf("%s: canary %s blocked=%v, want %v (%s)", tc.p, c.Name, c.Blocked, tc.blocked, c.Detail)
			}
		}
	}
}

// TestNetworkAllowShowsWhatNameResolutionAndTLSNeed: with network deny
// the sandbox shows none of /etc's resolver and CA files and reaches no
// listener of the host; with allow it shows them (or DNS and HTTPS would
// fail) and shares the host's network.
func TestNetworkAllowShowsWhatNameResolutionAndTLSNeed(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	script := `for f in /etc/resolv.conf /etc/hosts /etc/nsswitch.conf /etc/ssl/certs; do [ -e $f ] && echo $f; done; ` +
		`bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + port + `' 2>/dev/null && echo connected; true`
	for _, tc := range []struct {
		p    Profile
		want string
	}{
		{Profile{Network: Deny}, "/etc/nsswitch.conf\n"},
		{Profile{Network: Allow}, "/etc/resolv.conf\n/etc/hosts\n/etc/nsswitch.conf\n/etc/ssl/certs\nconnected\n"},
	} {
		out, errOut, code, err := run(t, l, tc.p, t.TempDir(), script)
		if err != nil || code != 0 {
			t.Fatalf("%s: code %d, err %v, stderr %q", tc.p, code, err, errOut)
		}
		want := tc.want
		for _, f := range []string{"/etc/resolv.conf", "/etc/hosts", "/etc/ssl/certs"} {
			if _, err := os.Stat(f); err != nil {
				want = strings.Replace(want, f+"\n", "", 1) // the host has none to show
			}
		}
		if out != want {
			t.Errorf("%s: %q, want %q", tc.p, out, want)
		}
	}
}

// TestReadyIsNotPoisonedByACancelledCaller: a live check whose caller is
// cancelled decides nothing; the next caller checks again and gets the
// host's answer (a cached refusal here would deny every later call).
func TestReadyIsNotPoisonedByACancelledCaller(t *testing.T) {
	needBwrap(t)
	l := NewLauncher("")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Ready(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled check: %v, want context.Canceled", err)
	}
	if err := l.Ready(context.Background()); err != nil {
		t.Fatalf("the check after a cancelled one: %v", err)
	}
}

// bubblewrap runs on the host with the command's environment, before any
// namespace exists: a dynamic-loader variable there (LD_PRELOAD of a
// library that runs code as it loads) would run outside the sandbox. A
// command whose environment sets one is refused, naming the variable.
func TestLoaderVariablesNeverReachBubblewrap(t *testing.T) {
	t.Parallel()
	l := needBwrap(t)
	ws := t.TempDir()
	for _, kv := range []string{"LD_PRELOAD=" + filepath.Join(ws, "x.so"), "LD_LIBRARY_PATH=" + ws, "GCONV_PATH=" + ws, "GLIBC_TUNABLES=glibc.malloc.check=3"} {
		c, err := l.Command(Profile{Filesystem: NoFS}, Spec{Path: "/bin/true", Args: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin", kv}, Dir: "/"})
		if err == nil {
			c.Close()
		}
		name, _, _ := strings.Cut(kv, "=")
		if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s reaches bubblewrap: %v", name, err)
		}
	}
	if c, err := l.Command(Profile{Mode: Off}, Spec{Path: "/bin/true", Args: []string{"/bin/true"}, Env: []string{"LD_LIBRARY_PATH=" + ws}}); err != nil {
		t.Errorf("an unsandboxed command's loader variables are its own: %v", err)
	} else {
		c.Close()
	}
}
