// Package pgtest starts a throw-away PostgreSQL cluster for tests: created
// with initdb in a temporary directory, listening only on a Unix socket in
// that directory, with fsync on (durability tests need it) and small
// buffers, and torn down by Stop. PostgreSQL refuses to run as root, so a
// root test process creates the cluster as the "postgres" user through
// runuser(1) and runs the server under that user's identity. The server
// (the postmaster) is the test process's own child with SIGKILL as its
// parent-death signal: a test binary killed outright takes its server
// with it, and the server's backends follow their postmaster.
//
// Nothing here is a mock: the server is the real one from Debian's
// postgresql package (scripts/install-peers.sh installs it).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnavailable says no cluster could be started here: no PostgreSQL
// binaries, or root without a postgres user and runuser. Tests skip on it,
// loudly.
var ErrUnavailable = errors.New("pgtest: PostgreSQL is not available")

// Cluster is one running throw-away server.
type Cluster struct {
	// Dir holds the data directory, the socket and the log.
	Dir string
	// Password is the superuser's ("postgres") password; every connection
	// authenticates with SCRAM, so a wrong password is refused.
	Password string
	bin      string
	runAs    []string            // the command prefix that runs as the cluster's owner
	cred     *syscall.Credential // the identity the server runs as (nil: ours)
	server   *exec.Cmd           // the running postmaster
	exited   chan struct{}       // closed once the postmaster is reaped
	pid      int
}

// BinDir finds the PostgreSQL server binaries: pg_config --bindir, then
// /usr/lib/postgresql/*/bin (Debian installs them there, off PATH).
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("%w: no initdb (install the postgresql package: sh scripts/install-peers.sh debian)", ErrUnavailable)
}

// Start creates and starts a cluster under a fresh temporary directory.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pablo-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bin: bin, Password: randomHex(12)}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: running as root needs the postgres user: %v", ErrUnavailable, err)
		}
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: running as root needs runuser: %v", ErrUnavailable, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.runAs = []string{runuser, "-u", "postgres", "--"}
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	pwfile := filepath.Join(dir, "pwfile")
	err = os.WriteFile(pwfile, []byte(c.Password+"\n"), 0o600)
	if err == nil && c.runAs != nil {
		u, _ := user.Lookup("postgres")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		err = os.Chown(pwfile, uid, gid)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if out, err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "--auth=scram-sha-256", "--pwfile="+pwfile, "-E", "UTF8", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: initdb: %v: %s", ErrUnavailable, err, out)
	}
	os.Remove(pwfile)
	conf := fmt.Sprintf("listen_addresses = ''\nunix_socket_directories = '%s'\nfsync = on\nshared_buffers = 16MB\nmax_connections = 60\nmax_wal_size = 64MB\nlogging_collector = off\n", dir)
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		f.Close()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.Dir, "data") }

func (c *Cluster) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, c.runAs...), filepath.Join(c.bin, prog)), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	return cmd.CombinedOutput()
}

// start runs the postmaster as this process's child and waits until it
// says it is ready (the status line of postmaster.pid, as pg_ctl -w does).
func (c *Cluster) start(ctx context.Context) error {
	logPath := filepath.Join(c.Dir, "log")
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if c.cred != nil {
		_ = logf.Chown(int(c.cred.Uid), int(c.cred.Gid))
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.data())
	cmd.Dir, cmd.Stdout, cmd.Stderr = c.Dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: c.cred}
	// Linux sends the parent-death signal when the thread that forked
	// exits: fork on a locked thread, which the runtime then keeps.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	logf.Close()
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c.server, c.exited, c.pid = cmd, exited, cmd.Process.Pid
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !c.ready() {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited before it was ready: %s", log)
		case <-ctx.Done():
			c.halt()
			return ctx.Err()
		case <-deadline.C:
			c.halt()
			return errors.New("postgres was not ready within a minute")
		case <-tick.C:
		}
	}
	return nil
}

// ready reports whether the postmaster.pid of this server says "ready".
func (c *Cluster) ready() bool {
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	return len(lines) > 7 && strings.TrimSpace(lines[0]) == strconv.Itoa(c.pid) && strings.TrimSpace(lines[7]) == "ready"
}

// halt shuts the server down at once (SIGQUIT: immediate shutdown, as a
// crash would leave it) and waits until the postmaster is reaped: it exits
// only once every backend has.
func (c *Cluster) halt() {
	if c.server == nil {
		return
	}
	_ = c.server.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		<-c.exited
	}
	c.server = nil
}

// PID is the postmaster's process ID.
func (c *Cluster) PID() int { return c.pid }

// Halt stops the server at once, as a crash would (immediate shutdown),
// and leaves it stopped until Resume.
func (c *Cluster) Halt(context.Context) error {
	c.halt()
	return nil
}

// Resume starts a halted server again on the same data directory.
func (c *Cluster) Resume(ctx context.Context) error { return c.start(ctx) }

// Restart stops the server at once (as a crash would) and starts it again
// on the same data directory.
func (c *Cluster) Restart(ctx context.Context) error {
	c.halt()
	return c.start(ctx)
}

// Stop stops the server at once, waits until its postmaster is reaped and
// removes the directory.
func (c *Cluster) Stop() error {
	c.halt()
	os.RemoveAll(c.Dir)
	return nil
}

// Alive reports whether a process with this ID exists (and is not a
// zombie).
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// URL is the URL of database db for user, on the cluster's socket, with no
// password: the caller supplies it apart, as a host must.
func (c *Cluster) URL(db, user string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Path: "/" + db, RawQuery: "host=" + url.QueryEscape(c.Dir)}
	return u.String()
}

// AdminURL is the URL of the maintenance database with the superuser's
// password in it, for the harness's own connections only.
func (c *Cluster) AdminURL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", c.Password), Path: "/" + db, RawQuery: "host=" + url.QueryEscape(c.Dir)}
	return u.String()
}

// Psql runs one SQL command in db through psql as the superuser and returns
// its output.
func (c *Cluster) Psql(ctx context.Context, db, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", c.Dir, "-U", "postgres", "-d", db, "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+c.Password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("psql: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// CreateDB creates a fresh database and returns its name.
func (c *Cluster) CreateDB(ctx context.Context, prefix string) (string, error) {
	name := strings.ToLower(prefix) + "_" + randomHex(4)
	var b strings.Builder
	for _, r := range name {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name = b.String()
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	if name[0] >= '0' && name[0] <= '9' {
		name = "d" + name
	}
	_, err := c.Psql(ctx, "postgres", "CREATE DATABASE "+name)
	return name, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
