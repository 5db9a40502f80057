package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pabloagent/pablo/internal/proc"
)

// Canary is one boundary check of [Probe]: an escape a sandboxed command
// tried, and whether the sandbox blocked it.
type Canary struct {
	// Name is a stable code: "write_outside_workspace",
	// "read_host_environment", "read_root_only_file", "connect_loopback",
	// "outlive_the_call", "type_into_terminal", "terminal_ioctl".
	Name string `json:"name"`
	// Blocked is true when the escape failed.
	Blocked bool `json:"blocked"`
	// Skipped is true when the escape could not be tried here (Detail
	// says why); Blocked is then false and means nothing.
	Skipped bool `json:"skipped,omitempty"`
	// Detail says what was tried, never what was read.
	Detail string `json:"detail"`
}

// probeAllowance bounds one canary's run.
const probeAllowance = 10 * time.Second

// Probe runs the live boundary canaries under profile p (with a workspace
// of its own, removed afterwards): a write outside the workspace, a read of
// the host's environment (every variable of this process that the command
// was not given), a read of a file only the host's user may read, a TCP
// connection to a loopback listener of this process, a `setsid -f`
// grandchild that tries to outlive the call, and TIOCSTI into a
// pseudo-terminal of the probe's own given as the sandbox's controlling
// terminal (see probeTerminal). It reports each blocked or not (or
// skipped, where it cannot be tried); what a canary read is never
// returned. A profile that is off shows
// what the canaries catch unconfined. The error is a setup failure (the
// launcher's *UnavailableError when no sandbox can be made).
func Probe(ctx context.Context, l *Launcher, p Profile) ([]Canary, error) {
	root, err := os.MkdirTemp("", "pablo-sandbox-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	ws, outside := filepath.Join(root, "workspace"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	ws, err = filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, err
	}
	mark := randomMark()
	runIn := func(script string) (string, error) {
		return probeRun(ctx, l, p, ws, script)
	}
	var out []Canary

	target := filepath.Join(outside, "canary")
	if _, err := runIn("echo " + mark + " > " + target); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(target)
	out = append(out, Canary{Name: "write_outside_workspace", Blocked: statErr != nil, Detail: "echo > a file beside the workspace"})

	env, err := runIn(`for f in /proc/1/environ /proc/$PPID/environ /proc/[0-9]*/environ; do cat "$f"; echo; done 2>/dev/null | tr '\0' '\n'`)
	if err != nil {
		return nil, err
	}
	leaked, looked := hostVariablesIn(env)
	detail := fmt.Sprintf("read /proc/*/environ, looked for the host's %d variables", looked)
	out = append(out, Canary{Name: "read_host_environment", Blocked: !leaked, Detail: detail})

	secret := filepath.Join(outside, "root-only")
	if err := os.WriteFile(secret, []byte(mark), 0o600); err != nil {
		return nil, err
	}
	read, err := runIn("cat " + secret)
	if err != nil {
		return nil, err
	}
	out = append(out, Canary{Name: "read_root_only_file", Blocked: !strings.Contains(read, mark), Detail: "cat a mode 0600 file of the host's user beside the workspace"})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if _, err := runIn("exec /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + "'"); err != nil {
		return nil, err
	}
	// A connection that was made sits in the listener's backlog by now.
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
	conn, acceptErr := ln.Accept()
	if acceptErr == nil {
		conn.Close()
	}
	out = append(out, Canary{Name: "connect_loopback", Blocked: acceptErr != nil, Detail: "TCP to a listener on the host's 127.0.0.1"})

	nap := "3600." + digits(mark)
	// The script waits until the grandchild has left the call's process
	// group, so the unconfined control run shows it surviving every time.
	flag := "/tmp/pablo-probe-" + mark
	if _, err := runIn("setsid -f /bin/sh -c 'echo > " + flag + "; exec /bin/sleep " + nap + "' </dev/null >/dev/null 2>&1; " +
		"i=0; while [ ! -e " + flag + " ] && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done; rm -f " + flag); err != nil {
		return nil, err
	}
	survivors := processesWith(nap)
	out = append(out, Canary{Name: "outlive_the_call", Blocked: len(survivors) == 0, Detail: "setsid -f sleep, looked for it once the call ended"})
	for _, pid := range survivors {
		if pr, err := os.FindProcess(pid); err == nil {
			_ = pr.Kill()
		}
	}

	terminal, err := probeTerminal(ctx, l, p, ws)
	if err != nil {
		return nil, err
	}
	return append(out, terminal...), nil
}

// probeRun runs one canary script and returns its stdout.
func probeRun(ctx context.Context, l *Launcher, p Profile, ws, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeAllowance)
	defer cancel()
	c, err := l.Command(p, Spec{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}, Workspace: ws})
	if err != nil {
		return "", err
	}
	pr, err := c.Start(ctx, proc.Options{MaxStdout: 1 << 20, MaxStderr: 1 << 16})
	if err != nil {
		c.Close()
		return "", err
	}
	res, waitErr := pr.Wait()
	if err := c.Finish(res.Stderr); err != nil {
		return "", err
	}
	if waitErr != nil {
		return "", waitErr
	}
	return string(res.Stdout), nil
}

// hostVariablesIn reports whether text holds any of this process's
// environment entries that a sandboxed command is not given, and how many
// it looked for.
func hostVariablesIn(text string) (leaked bool, looked int) {
	lines := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		lines[l] = true
	}
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "PATH", "LANG", "HOME", "PWD", "SHLVL", "_", "OLDPWD":
			continue
		}
		if len(value) < 4 {
			continue
		}
		looked++
		if lines[kv] {
			leaked = true
		}
	}
	return leaked, looked
}

// processesWith lists the PIDs of the host's processes whose command line
// holds arg.
func processesWith(arg string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || !strings.Contains(string(b), arg) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(n))); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// digits keeps the decimal digits of s, for a sleep argument.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

func randomMark() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "0123456789"
}
