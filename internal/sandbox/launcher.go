package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/proc"
)

// DefaultPath is where the Debian package bubblewrap installs bwrap.
const DefaultPath = "/usr/bin/bwrap"

// Home is the private, discarded home directory of a sandboxed command
// (its HOME).
const Home = "/tmp/home"

// UID and GID are the unprivileged identity a sandboxed command runs as
// inside its user namespace (the conventional "nobody").
const (
	UID = 65534
	GID = 65534
)

// readyAllowance bounds the live check of [Launcher.Ready].
const readyAllowance = 10 * time.Second

// Launcher is bubblewrap, resolved once. It is immutable once built, except
// for the outcome of its one live check, which it computes once; it is
// safe for concurrent use.
type Launcher struct {
	path   string
	err    error    // why no sandbox can be made here, when one cannot
	system []string // the bwrap arguments that show the system directories
	filter []byte   // the compiled seccomp filter (nil where none is built)

	readyMu   sync.Mutex // held while the live check runs
	readyDone bool       // the check ran to an outcome of its own
	readyErr  error

	cacheDir string    // where the /etc view is kept ("" for none)
	etcOnce  sync.Once // makes the /etc view on the first call that uses it
	etc      string    // the /etc view's directory, "" when there is none
}

// NewLauncher resolves bubblewrap at path (DefaultPath when empty): it must
// be an absolute path to an executable regular file; no PATH search is
// done. A launcher that cannot be used still returns, and every use fails
// with its *UnavailableError, so a host decides whether it needs one.
func NewLauncher(path string) *Launcher {
	if path == "" {
		path = DefaultPath
	}
	l := &Launcher{path: path}
	if !platformSupported {
		l.err = &UnavailableError{Reason: UnsupportedPlatform, Path: path, Detail: "this platform has no bubblewrap"}
		return l
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		l.err = &UnavailableError{Reason: NotInstalled, Path: path, Detail: "the launcher must be a clean absolute path"}
		return l
	}
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(real); err == nil && (!info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0) {
			err = fmt.Errorf("not an executable file")
		}
	}
	if err != nil {
		l.err = &UnavailableError{Reason: NotInstalled, Path: path, Detail: shortErr(err)}
		return l
	}
	l.path, l.system = real, systemMounts()
	// An architecture without the filter's numbers runs without it: the
	// new session is what keeps a command off the terminal, the filter
	// is the second layer (the package doc says where it exists).
	l.filter, _ = terminalFilter(runtime.GOARCH)
	l.cacheDir, _ = os.UserCacheDir()
	return l
}

// Path is bubblewrap's resolved path.
func (l *Launcher) Path() string { return l.path }

// Err is the *UnavailableError of a launcher that cannot be used, without a
// live check; nil when bubblewrap was found (see Ready).
func (l *Launcher) Err() error { return l.err }

// Ready reports whether a sandbox can be made on this host: nil, or the
// *UnavailableError that says why not. The first call runs bubblewrap once
// with every namespace a call gets (a few milliseconds); later calls
// return its outcome. A check its caller cancelled decides nothing: that
// caller gets its context's error, and the next call checks again.
func (l *Launcher) Ready(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	l.readyMu.Lock()
	defer l.readyMu.Unlock()
	if l.readyDone {
		return l.readyErr
	}
	err := l.check(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	l.readyDone, l.readyErr = true, err
	return err
}

// check runs `true` in the narrowest sandbox.
func (l *Launcher) check(parent context.Context) error {
	// The check's process is started and joined here: it carries none of
	// the caller's values (a process-group recorder would record it), only
	// its cancellation.
	ctx, cancel := context.WithTimeout(context.Background(), readyAllowance)
	defer cancel()
	stop := context.AfterFunc(parent, cancel)
	defer stop()
	c, err := l.Command(Profile{Filesystem: NoFS}, Spec{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", ":"}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/"})
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := c.Start(ctx, proc.Options{MaxStderr: 4096})
	if err != nil {
		return &UnavailableError{Reason: NoNamespaces, Path: l.path, Detail: shortErr(err)}
	}
	res, err := p.Wait()
	if err != nil {
		return &UnavailableError{Reason: NoNamespaces, Path: l.path, Detail: shortErr(err)}
	}
	if err := c.Finish(res.Stderr); err != nil {
		return &UnavailableError{Reason: NoNamespaces, Path: l.path, Detail: bwrapMessage(res.Stderr)}
	}
	if res.ExitCode != 0 {
		return &UnavailableError{Reason: NoNamespaces, Path: l.path, Detail: fmt.Sprintf("the check command exited %d", res.ExitCode)}
	}
	return nil
}

// Spec is what a sandboxed command runs, and where.
type Spec struct {
	// Path is the absolute program; it must be visible inside (a system
	// directory, the workspace or a read path).
	Path string
	// Args is the argument vector, Args[0] included (bubblewrap passes
	// Path as argv[0]).
	Args []string
	// Env is the command's whole environment. HOME is replaced by the
	// private Home.
	Env []string
	// Workspace is the canonical absolute host directory the filesystem
	// scope is about (a shell's workspace, an MCP server's cwd binding).
	// It is shown at the same path. Empty only with NoFS.
	Workspace string
	// Dir is the working directory, at or below Workspace; empty means
	// Workspace. Under NoFS it is a private empty directory at that path.
	Dir string
	// Egress is the way out of a network allowlist; required with it,
	// ignored otherwise.
	Egress *Egress
}

// Egress is how a call under network allowlist reaches its filtering
// proxy (package egress), which the host serves outside the sandbox.
type Egress struct {
	// Socket is the host path of the Unix socket the proxy listens on; it
	// is bound into the sandbox.
	Socket string
	// Forwarder is the absolute host path of a binary that calls
	// egress.ForwarderMain first thing (the host's own executable, say).
	// It is bound into the sandbox and runs as the command's parent: it
	// listens on egress.ListenAddr in the sandbox's network namespace and
	// carries each connection to Socket.
	Forwarder string
}

// Inside the sandbox, where the egress socket and forwarder are shown.
const (
	egressDir       = "/run/pablo-egress"
	egressSocket    = egressDir + "/proxy.sock"
	egressForwarder = egressDir + "/" + egress.ForwarderName
)

// Command is one command ready to start: in the sandbox, or unconfined
// when its profile is off.
type Command struct {
	// Cmd is what to start (with internal/proc): bubblewrap with the
	// command as its arguments, or the command itself when off.
	Cmd     *exec.Cmd
	Profile Profile

	status, statusW *os.File // bubblewrap's JSON status pipe
	statusRead      []byte   // what was read of it before Finish
	filter          *os.File // the read end bubblewrap loads the seccomp filter from
	binds           []fdBind // the directories bound by descriptor
}

// fdBind is a directory bubblewrap binds from its descriptor onto dest.
type fdBind struct {
	f        *os.File
	fd       int // its number in the child
	dest     string
	readOnly bool
}

func closeBinds(binds []fdBind) {
	for _, b := range binds {
		b.f.Close()
	}
}

// repoBinds opens what repo-write binds by descriptor in workspace: each
// submodule's directory, read-only, and each directory on the way to it,
// onto itself, parents first. More than maxRepoBinds is an error wrapping
// ErrInvalidProfile, as is a submodule with no directory: the command is
// not run with a submodule left writable.
func repoBinds(workspace string) ([]fdBind, error) {
	var out []fdBind
	var missing []string
	seen := map[string]bool{}
	for _, rel := range gitlinks(workspace) {
		chain, err := openBeneath(workspace, rel)
		if err != nil {
			// No directory there (or a link, a file): nothing to bind,
			// and nothing would stop the command making one, .git and
			// all, that git would look into.
			missing = append(missing, rel)
			continue
		}
		out = appendChain(out, seen, chain)
		if len(out) > maxRepoBinds {
			closeBinds(out)
			return nil, fmt.Errorf("%w: filesystem repo-write keeps each submodule read-only, and this repository has more than %d submodule directories to keep: use \"read-only\" or \"workspace-write\"", ErrInvalidProfile, maxRepoBinds)
		}
	}
	if len(missing) > 0 {
		closeBinds(out)
		if len(missing) > 5 {
			missing = append(missing[:5], "...")
		}
		return nil, fmt.Errorf("%w: filesystem repo-write keeps each submodule read-only, and these have no directory in the work tree (or a link or a file in its place), where a command could make one with a .git of its own that the host's git would look into: %s; check them out (git submodule update --init), make each an empty directory, or use \"workspace-write\"", ErrInvalidProfile, strings.Join(missing, ", "))
	}
	// A parent's bind comes before its children's, which it would
	// otherwise cover.
	slices.SortStableFunc(out, func(a, b fdBind) int { return strings.Count(a.dest, "/") - strings.Count(b.dest, "/") })
	return out, nil
}

// appendChain adds the binds of chain (what openBeneath or
// openFileBeneath opened, from the workspace down) to out: each entry
// bound onto itself, writable, but the last, the one kept, read-only; an
// entry seen already is closed.
func appendChain(out []fdBind, seen map[string]bool, chain []*os.File) []fdBind {
	for i, f := range chain {
		if seen[f.Name()] {
			f.Close()
			continue
		}
		seen[f.Name()] = true
		out = append(out, fdBind{f: f, dest: f.Name(), readOnly: i == len(chain)-1})
	}
	return out
}

// maxRepoBinds bounds the directories repo-write binds by descriptor
// (submodules and the directories above them).
const maxRepoBinds = 512

// Command builds the command that runs spec under profile p. A profile
// that is off gives the unconfined command; a required one fails with the
// launcher's *UnavailableError when no sandbox can be made here. The
// caller starts it with [Command.Start] and calls Finish once the process
// is joined.
//
// Under a process-group recorder, bubblewrap itself starts only once the
// group is recorded: proc's gate shell holds it (see proc.Start). Its own
// --block-fd would not do: the namespace's init reads it before it sets
// its parent-death signal, so a host killed before the release would leave
// that init running the command unrecorded (bubblewrap takes end of file
// for a release) or, were the write end held open, blocked forever outside
// any group the host could reap.
func (l *Launcher) Command(p Profile, spec Spec) (*Command, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.Normalized()
	if p.Mode != Off && p.Network == RepositoryHostOnly {
		return nil, fmt.Errorf("%w: network repository-host-only must be resolved to the repository's hosts first (Profile.ResolveRepositoryHosts)", ErrInvalidProfile)
	}
	if spec.Dir == "" {
		spec.Dir = spec.Workspace
	}
	if !filepath.IsAbs(spec.Path) || len(spec.Args) == 0 || !filepath.IsAbs(spec.Dir) && (p.Mode != Off || spec.Dir != "") {
		return nil, fmt.Errorf("%w: the program and the working directory must be absolute (off: or empty), and Args hold at least argv[0]", ErrInvalidProfile)
	}
	if p.Mode == Off {
		return &Command{Profile: p, Cmd: &exec.Cmd{Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir}}, nil
	}
	if l == nil {
		return nil, &UnavailableError{Reason: NotInstalled, Path: DefaultPath, Detail: "no launcher was given"}
	}
	if l.err != nil {
		return nil, l.err
	}
	for _, kv := range spec.Env {
		if name, _, _ := strings.Cut(kv, "="); loaderVariable(name) {
			return nil, fmt.Errorf("%w: the environment sets %s, a dynamic-loader variable: bubblewrap runs with the command's environment, so it would act on bubblewrap on the host before the sandbox exists; remove it (or run the command with the sandbox off)", ErrInvalidProfile, name)
		}
	}
	if p.Filesystem != NoFS && (!filepath.IsAbs(spec.Workspace) || spec.Workspace == "/") {
		return nil, fmt.Errorf("%w: filesystem %s needs an absolute workspace other than /", ErrInvalidProfile, p.Filesystem)
	}
	var gitDir string
	if p.Filesystem == RepoWrite {
		var err error
		if gitDir, err = repoGitDir(spec.Workspace); err != nil {
			return nil, err
		}
	}
	// Under repo-write each submodule is another repository: its
	// directory, .git file included, is read-only (see gitlinks). Each
	// directory between the workspace and it is bound onto itself,
	// writable, only so that it is a mount point, which cannot be moved
	// aside to put a new directory of the command's where the submodule
	// was. Each is opened without following a link and bound by
	// descriptor, so a link the command made on the way binds nothing
	// of the host's; a submodule with no directory has nothing to keep.
	var ro []fdBind
	if p.Filesystem == RepoWrite {
		var err error
		if ro, err = repoBinds(spec.Workspace); err != nil {
			return nil, err
		}
	}
	if p.Filesystem == WorkspaceWrite && p.KeepGitConfig {
		// Where the remotes are read from stays read-only (see
		// gitConfigBinds): the next task's repository-host-only
		// allowlist is not the command's to widen.
		ro = gitConfigBinds(spec.Workspace)
	}
	r, w, err := os.Pipe()
	if err != nil {
		closeBinds(ro)
		return nil, &SetupError{Detail: "status pipe: " + shortErr(err)}
	}
	files := []*os.File{w}
	var filter *os.File
	if l.filter != nil {
		if filter, err = filterPipe(l.filter); err != nil {
			r.Close()
			w.Close()
			closeBinds(ro)
			return nil, &SetupError{Detail: "seccomp filter pipe: " + shortErr(err)}
		}
		files = append(files, filter)
	}
	env := make([]string, 0, len(spec.Env)+1)
	for _, kv := range spec.Env {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+Home)
	if p.Network == Allowlist {
		if spec.Egress == nil || !filepath.IsAbs(spec.Egress.Socket) || !filepath.IsAbs(spec.Egress.Forwarder) {
			r.Close()
			w.Close()
			if filter != nil {
				filter.Close()
			}
			closeBinds(ro)
			return nil, fmt.Errorf("%w: network allowlist needs the egress proxy's absolute socket path and forwarder binary (Spec.Egress)", ErrInvalidProfile)
		}
		proxy := "http://" + egress.ListenAddr
		env = slices.DeleteFunc(env, isProxyVar)
		env = append(env, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy, "ALL_PROXY="+proxy, "all_proxy="+proxy)
	}
	for i := range ro {
		ro[i].fd = 3 + len(files)
		files = append(files, ro[i].f)
	}
	// bubblewrap runs with the command's environment, not ours: its init
	// is PID 1 inside, and /proc/1/environ is readable there.
	cmd := &exec.Cmd{Path: l.path, Args: l.args(p, spec, gitDir, ro), Env: env, ExtraFiles: files}
	return &Command{Cmd: cmd, Profile: p, status: r, statusW: w, filter: filter, binds: ro}, nil
}

// Start starts the command as an owned process group (proc.Start), then
// closes the parent's copy of the status pipe's write end.
func (c *Command) Start(ctx context.Context, opts proc.Options) (*proc.Process, error) {
	if c.status != nil {
		opts.NamespaceInit = c.namespaceInit
		// bubblewrap runs the command in a session of its own
		// (--new-session); bubblewrap itself stays in the host's.
		opts.SessionByCommand = true
	}
	p, err := proc.Start(ctx, c.Cmd, opts)
	c.Started()
	return p, err
}

// Started closes the parent's copies of what only the child needs: the
// status pipe's write end and the seccomp filter's read end.
// [Command.Start] calls it.
func (c *Command) Started() {
	if c.statusW != nil {
		c.statusW.Close()
		c.statusW = nil
	}
	if c.filter != nil {
		c.filter.Close()
		c.filter = nil
	}
	closeBinds(c.binds)
	c.binds = nil
}

// Finish reads bubblewrap's status once its process group is joined, with
// the stderr the run captured (nil when it was not captured): nil when the
// command ran (or the profile is off), a *SetupError when the sandbox was
// never set up and the command never started.
func (c *Command) Finish(stderr []byte) error {
	if c.status == nil {
		return nil
	}
	c.Started()
	// Every holder of the write end is gone once the group is joined; the
	// deadline only guards against a holder we do not know of.
	_ = c.status.SetReadDeadline(time.Now().Add(time.Second))
	buf := slices.Grow(c.statusRead, 512)
	for len(buf) < maxStatusBytes {
		n, err := c.status.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
	}
	c.Close()
	if _, ran := ParseStatus(buf); ran {
		return nil
	}
	return &SetupError{Detail: bwrapMessage(stderr)}
}

// namespaceInit is the PID of the sandbox's init, which bubblewrap writes
// first on its status pipe once it has created it (0 when it has not).
// Every process of the sandbox but bubblewrap itself lives in that init's
// PID namespace, in the session the init leads (--new-session): the
// group's kill reaches bubblewrap alone, the init dies of its parent-death
// signal (--die-with-parent), and proc proves the sandbox gone by the
// init's exit.
func (c *Command) namespaceInit() int {
	// Called once bubblewrap is reaped: what it wrote is in the pipe.
	_ = c.status.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 512)
	n, _ := c.status.Read(buf)
	c.statusRead = buf[:n]
	return ChildPID(c.statusRead)
}

// Close releases the status pipe. Finish calls it; call it yourself only
// when the command is never started.
func (c *Command) Close() {
	c.Started()
	if c.status != nil {
		c.status.Close()
		c.status = nil
	}
}

// args is bubblewrap's argument vector for spec under p.
func (l *Launcher) args(p Profile, spec Spec, gitDir string, ro []fdBind) []string {
	a := make([]string, 0, 96)
	a = append(a, l.path,
		"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
		"--uid", "65534", "--gid", "65534", "--hostname", "sandbox",
		"--die-with-parent", "--cap-drop", "ALL", "--json-status-fd", "3",
		// The command gets a session of its own, so no controlling
		// terminal: it cannot open /dev/tty, and the kernel refuses it
		// TIOCSTI on a terminal it holds (not its controlling one).
		"--new-session")
	if l.filter != nil {
		// Refuses TIOCSTI and TIOCLINUX on any descriptor (fd 4 is the
		// filter pipe, ExtraFiles[1]).
		a = append(a, "--seccomp", "4")
	}
	if !p.SharesHostNetwork() {
		// bubblewrap brings up the new namespace's loopback interface;
		// nothing else is there.
		a = append(a, "--unshare-net")
	}
	a = append(a, l.system...)
	if view := l.etcView(p, spec); view != "" {
		a = append(a, "--ro-bind", view, "/etc")
	} else {
		for _, f := range etcRun {
			a = append(a, "--ro-bind-try", f, f)
		}
	}
	switch p.Network {
	case Allow, UnrestrictedWithApproval:
		for _, f := range etcNetwork {
			a = append(a, "--ro-bind-try", f, f)
		}
	case Allowlist:
		for _, f := range etcTLS {
			a = append(a, "--ro-bind-try", f, f)
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", Home)
	for _, r := range p.ReadPaths {
		a = append(a, "--ro-bind", r, r)
	}
	switch p.Filesystem {
	case NoFS:
		a = append(a, "--dir", spec.Dir)
	case ReadOnly:
		a = append(a, "--ro-bind", spec.Workspace, spec.Workspace)
	case WorkspaceWrite:
		a = append(a, "--bind", spec.Workspace, spec.Workspace)
	case RepoWrite:
		a = append(a, "--bind", spec.Workspace, spec.Workspace)
		if gitDir != "" {
			// The repository's .git, when the workspace holds it, stays
			// read-only: no hook, config or ref is the command's to write.
			a = append(a, "--ro-bind", gitDir, gitDir)
		}
	}
	if p.Filesystem == WorkspaceWrite || p.Filesystem == RepoWrite {
		for _, b := range ro {
			op := "--bind-fd"
			if b.readOnly {
				op = "--ro-bind-fd"
			}
			a = append(a, op, strconv.Itoa(b.fd), b.dest)
		}
	}
	a = append(a, "--chdir", spec.Dir)
	if p.Network == Allowlist {
		a = append(a, "--ro-bind", spec.Egress.Forwarder, egressForwarder, "--bind", spec.Egress.Socket, egressSocket,
			"--", egressForwarder, egressSocket, spec.Path)
	} else {
		a = append(a, "--", spec.Path)
	}
	return append(a, spec.Args[1:]...)
}

// repoGitDir finds the git repository whose work tree holds workspace:
// the .git (directory or file) of workspace or its nearest ancestor that
// has one. It returns that .git when it lies inside workspace (the
// workspace is the work tree's root), "" when it lies above (the
// workspace shows none of it), and an error wrapping ErrInvalidProfile
// when no repository holds the workspace.
func repoGitDir(workspace string) (string, error) {
	for dir := workspace; ; dir = filepath.Dir(dir) {
		g := filepath.Join(dir, ".git")
		if _, err := os.Lstat(g); err == nil {
			if dir == workspace {
				return g, nil
			}
			return "", nil
		}
		if dir == "/" || dir == "." {
			return "", fmt.Errorf("%w: filesystem repo-write: the workspace %s is in no git repository (no .git in it or above it): use \"workspace-write\" or \"read-only\"", ErrInvalidProfile, workspace)
		}
	}
}

// etcView is the directory shown at /etc in one mount for a call under p,
// or "" when the call binds each file: with network allow (name resolution
// files such as resolv.conf change while a host runs, and are read fresh),
// or when the call shows something of its own under /etc.
func (l *Launcher) etcView(p Profile, spec Spec) string {
	if p.Network != Deny || underEtc(spec.Workspace) || underEtc(spec.Dir) || slices.ContainsFunc(p.ReadPaths, underEtc) {
		return ""
	}
	l.etcOnce.Do(func() { l.etc = etcView(l.cacheDir) })
	return l.etc
}

func underEtc(p string) bool { return within("/etc", p) }

// Of /etc, the files any program may need to run: the dynamic loader's
// cache (its configuration is for ldconfig only), the alternatives /usr/bin
// links through, the user and group names (uid 65534 is "nobody"), the
// name service switch and the local time. Each is one mount of every
// call's setup, so the list stays short.
var etcRun = []string{
	"/etc/ld.so.cache", "/etc/alternatives",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime",
}

// With network allow, also what name resolution and TLS need.
var etcNetwork = append([]string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
}, etcTLS...)

// With network allowlist, only what TLS needs: the proxy resolves names.
var etcTLS = []string{"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki"}

// isProxyVar reports a proxy variable of the command's own environment,
// which the allowlist's replaces.
func isProxyVar(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	switch strings.ToUpper(k) {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY":
		return true
	}
	return false
}

// The system directories, shown read-only (or, where the host has them as
// links into /usr, as the same links).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemMounts lists the bubblewrap arguments that show the system
// directories as the host lays them out.
func systemMounts() []string {
	var a []string
	for _, d := range systemDirs {
		info, err := os.Lstat(d)
		switch {
		case err != nil:
		case info.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case info.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	return a
}

// IsSystemPath reports whether p lies in a system directory every sandbox
// shows.
func IsSystemPath(p string) bool {
	for _, d := range systemDirs {
		if within(d, p) {
			return true
		}
	}
	return false
}

func shortErr(err error) string { return bwrapLine(err.Error()) }

func bwrapLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > maxDetailBytes {
		s = s[:maxDetailBytes]
	}
	return strings.ToValidUTF8(s, "?")
}

// loaderVariable reports whether name is read by the dynamic loader or
// the C library of a dynamically linked program as it starts: the
// variables glibc ignores in a setuid program (LD_*, GCONV_PATH,
// GLIBC_TUNABLES, ...). bubblewrap is not setuid, so in its environment
// they would load code or change its behaviour on the host.
func loaderVariable(name string) bool {
	if strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "MALLOC_") {
		return true
	}
	switch name {
	case "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
		"NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS":
		return true
	}
	return false
}
