package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo"

	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/pgtest"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// pg is this package run's throw-away PostgreSQL cluster, started by the
// first test that needs it and torn down by TestMain.
var pg struct {
	once    sync.Once
	cluster *pgtest.Cluster
	err     error
}

func TestMain(m *testing.M) {
	pablo.EgressForwarderMain()
	code := m.Run()
	if crashHost.dir != "" {
		os.RemoveAll(crashHost.dir)
	}
	if c := pg.cluster; c != nil {
		pid := c.PID()
		if err := c.Stop(); err != nil || pgtest.Alive(pid) {
			fmt.Fprintf(os.Stderr, "examples/pablo: the test cluster (postmaster %d) did not stop: %v\n", pid, err)
			code = 1
		}
	}
	os.Exit(code)
}

// pgDB returns a fresh database's URL (no password) and the cluster.
func pgDB(t *testing.T) (string, *pgtest.Cluster) {
	t.Helper()
	pg.once.Do(func() { pg.cluster, pg.err = pgtest.Start(context.Background()) })
	if pg.err != nil {
		t.Skipf("!!! NO POSTGRESQL SERVER, this PostgreSQL store test SKIPS: %v", pg.err)
	}
	name, err := pg.cluster.CreateDB(context.Background(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return pg.cluster.URL(name, "postgres"), pg.cluster
}

// cliEnv runs the CLI in-process with env as its whole environment.
func cliEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	wd, _ := os.Getwd()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	code := run(context.Background(), args, &host{stdout: &out, stderr: &errb, lookupEnv: lookup, workDir: wd})
	return code, out.String(), errb.String()
}

// encodings are the forms a leaked secret could take in an output.
func encodings(s string) []string {
	return []string{s, url.QueryEscape(s), url.PathEscape(s), base64.StdEncoding.EncodeToString([]byte(s)),
		base64.RawURLEncoding.EncodeToString([]byte(s)), hex.EncodeToString([]byte(s))}
}

func TestCLIKeepsTheLedgerInPostgres(t *testing.T) {
	u, c := pgDB(t)
	env := map[string]string{"PGPASSWORD": c.Password}
	secret := c.Password
	// A read command on a database with no schema never creates one.
	code, _, stderr := cliEnv(t, env, "ledger", "show", "--store", u)
	if code != 2 || !strings.Contains(stderr, "run a write command") {
		t.Fatalf("ledger show on an empty database: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := cliEnv(t, env, "demo", "--json", "--store", u)
	if code != 0 {
		t.Fatalf("demo --store URL: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// PABLO_STORE names it as well.
	env[storeEnv] = u
	code, shown, stderr2 := cliEnv(t, env, "ledger", "show", "--json")
	if code != 0 || !strings.Contains(shown, `"status":"completed"`) {
		t.Fatalf("ledger show through PABLO_STORE: exit %d\n%s\n%s", code, shown, stderr2)
	}
	code, recovered, stderr3 := cliEnv(t, env, "ledger", "recover")
	if code != 0 || !strings.Contains(recovered, "completed") {
		t.Fatalf("ledger recover: exit %d\n%s\n%s", code, recovered, stderr3)
	}
	// The password reaches no output and no record, in any
	// encoding.
	name := u[strings.LastIndexByte(u, '/')+1 : strings.IndexByte(u, '?')]
	rows, err := c.Psql(context.Background(), name, `SELECT string_agg(convert_from(body, 'UTF8'), E'\n') FROM pablo_records`)
	if err != nil || !strings.Contains(rows, `"kind":"finish"`) {
		t.Fatalf("the records: %v\n%.300s", err, rows)
	}
	for what, text := range map[string]string{"stdout": stdout + shown + recovered, "stderr": stderr + stderr2 + stderr3, "records": rows} {
		for _, enc := range encodings(secret) {
			if strings.Contains(text, enc) {
				t.Fatalf("the %s holds the password (as %q)", what, enc)
			}
		}
	}
}

func TestCLIRefusesAStoreURLWithAPassword(t *testing.T) {
	const secret = "hunter2-Secret"
	for _, u := range []string{
		"postgres://alice:" + secret + "@db.internal/ledger",
		"postgres://alice@db.internal/ledger?password=" + secret,
	} {
		for _, args := range [][]string{{"demo", "--store", u}, {"ledger", "show", "--store", u}, {"ledger", "recover", "--store", u, "--json"}} {
			code, stdout, stderr := cliEnv(t, nil, args...)
			if code != 2 || !strings.Contains(stderr, "carries a password") {
				t.Fatalf("%v: exit %d, %s", args[:2], code, stderr)
			}
			for _, enc := range append(encodings(secret), "alice") {
				if strings.Contains(stdout+stderr, enc) {
					t.Fatalf("%v echoes %q: %s%s", args[:2], enc, stdout, stderr)
				}
			}
		}
		code, _, stderr := cliEnv(t, map[string]string{storeEnv: u}, "ledger", "show")
		if code != 2 || strings.Contains(stderr, secret) {
			t.Fatalf("PABLO_STORE with a password: exit %d, %s", code, stderr)
		}
	}
}

func TestCLIRecoverRefusesALiveLease(t *testing.T) {
	u, c := pgDB(t)
	s, err := postgres.Open(context.Background(), postgres.Options{URL: u, Password: c.Password})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := ledger.NewRoot(context.Background(), ledger.Options{Store: s, TaskID: "live-task"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PGPASSWORD": c.Password}
	// Asked for by its ID, a live task is refused (exit 3); over the whole
	// store it is listed in flight, its work not reported.
	if code, _, stderr := cliEnv(t, env, "ledger", "recover", "--store", u, "live-task"); code != 3 || !strings.Contains(stderr, "lease live") {
		t.Fatalf("recover live-task: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{{"ledger", "recover", "--store", u}, {"ledger", "show", "--store", u}} {
		code, out, stderr := cliEnv(t, env, args...)
		if code != 0 || !strings.Contains(out, "in flight") || !strings.Contains(out, "live-task") {
			t.Fatalf("%v over a store with a live task: exit %d, %s%s", args, code, out, stderr)
		}
	}
	// Once its owner is gone (Close releases), it is recoverable.
	s.Close()
	code, out, stderr := cliEnv(t, env, "ledger", "recover", "--store", u, "live-task")
	if code != 0 || !strings.Contains(out, "live-task") {
		t.Fatalf("recover after release: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestCLITakesTheStorePasswordFromALedgerStoreCredential: with a
// deployment, the password is the credential for the ledger.store
// consumer, and it reaches no output, no trace and no record.
func TestCLITakesTheStorePasswordFromALedgerStoreCredential(t *testing.T) {
	u, c := pgDB(t)
	dir := t.TempDir()
	ws := dir + "/work"
	os.Mkdir(ws, 0o700)
	cfg := dir + "/d.toml"
	os.WriteFile(cfg, []byte("schema_version = 1\n[credentials.ledger]\nconsumer = \"ledger.store\"\nsources = [{ kind = \"environment\", name = \"LEDGER_DB_PASSWORD\" }]\n"), 0o600)
	script := dir + "/script.json"
	os.WriteFile(script, []byte(`{"turns":[{"text":["x"],"tool_calls":[{"id":"c1","name":"fs.list","arguments":{"path":"."}}]},{"text":["done"]}]}`), 0o600)
	trace := dir + "/trace.jsonl"
	args := []string{"run", "go", "--json", "--script", script, "--store", u, "--trace", trace, "--config", cfg, "--bind", "workspace=" + ws}
	// Without the credential's source the password is missing: refused.
	code, _, stderr := cliEnv(t, nil, args...)
	if code != 2 || !strings.Contains(stderr, "ledger.store") {
		t.Fatalf("run without the credential's source: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := cliEnv(t, map[string]string{"LEDGER_DB_PASSWORD": c.Password}, args...)
	if code != 0 || !strings.Contains(stdout, `"status":"completed"`) {
		t.Fatalf("run with a ledger.store credential: exit %d\n%s\n%s", code, stdout, stderr)
	}
	traced, _ := os.ReadFile(trace)
	name := u[strings.LastIndexByte(u, '/')+1 : strings.IndexByte(u, '?')]
	rows, err := c.Psql(context.Background(), name, `SELECT string_agg(convert_from(body, 'UTF8'), E'\n') FROM pablo_records`)
	if err != nil || !strings.Contains(rows, `"kind":"finish"`) {
		t.Fatalf("the records: %v\n%.300s", err, rows)
	}
	for what, text := range map[string]string{"stdout": stdout, "stderr": stderr, "trace": string(traced), "records": rows} {
		for _, enc := range encodings(c.Password) {
			if strings.Contains(text, enc) {
				t.Fatalf("the %s holds the password (as %q)", what, enc)
			}
		}
	}
}

// TestKillDuringToolCallLeavesUnknownOutcomeInPostgres is
// TestKillDuringToolCallLeavesUnknownOutcome on the PostgreSQL store: the
// host is killed with a shell call in flight; `ledger recover` from
// another process lists the task in flight while the dead host's lease is
// live (and, asked for by its ID, refuses with exit 3),
// and another host whose clock is past the expiry reads the shell call as
// unknown and the earlier read as completed.
func TestKillDuringToolCallLeavesUnknownOutcomeInPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a process")
	}
	u, c := pgDB(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "pablo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o600)
	marker := filepath.Join(ws, "started")
	script := `{"turns":[
	 {"text":["x"],"tool_calls":[{"name":"fs_read","arguments":{"path":"a.txt"}}]},
	 {"text":["y"],"tool_calls":[{"name":"shell_run","arguments":{"command":"touch ` + marker + ` && sleep 60","cwd":"."}}]},
	 {"text":["done"]}]}`
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.filesystem]\nwrite = true\n"), 0o600)
	env := append(os.Environ(), "PGPASSWORD="+c.Password)
	cmd := exec.Command(bin, "run", "go", "--config", filepath.Join(dir, "deployment.toml"), "--bind", "workspace="+ws, "--store", u, "--json")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			t.Fatal("the shell call never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	rec := exec.Command(bin, "ledger", "recover", "--store", u)
	rec.Env = env
	out, err := rec.CombinedOutput()
	// Over the whole store the task is listed in flight, its work not yet
	// reported; asked for by its ID, recover refuses with exit 3.
	if err != nil || !strings.Contains(string(out), "in flight") || strings.Contains(string(out), "unknown") {
		t.Fatalf("recover while the killed host's lease is live: %v, %s; want it listed in flight", err, out)
	}
	taskID := strings.Fields(string(out))[1]
	rec = exec.Command(bin, "ledger", "recover", "--store", u, taskID)
	rec.Env = env
	out, err = rec.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "lease live") {
		t.Fatalf("recover %s while the killed host's lease is live: %v, %s; want exit 3", taskID, err, out)
	}
	later := clock.NewManual(time.Now().Add(time.Minute)) // a read-only store renews nothing
	s, err := postgres.Open(context.Background(), postgres.Options{URL: u, Password: c.Password, ReadOnly: true, Clock: later})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := ledger.Recover(context.Background(), s)
	if err != nil || len(rep.Tasks) != 1 {
		t.Fatalf("recover after the lease expired: %+v, %v", rep, err)
	}
	task := rep.Tasks[0]
	if task.Outcome != nil || len(task.Unknown) != 1 || task.Unknown[0].Name != "shell.run" {
		t.Fatalf("want one unknown shell.run: %+v", task)
	}
	var completedRead bool
	for _, c := range task.Completed {
		completedRead = completedRead || c.Name == "fs.read"
	}
	if !completedRead {
		t.Fatalf("the earlier fs.read is not completed: %+v", task.Completed)
	}
}

// TestCLIRefusesAConnectionStringThatIsNotAURL: a store value meant for
// PostgreSQL but not a postgres:// URL (a key=value connection string, a
// misspelt scheme, a URL after a space) is refused as such, never opened
// or created as a bbolt file of that name, and no output repeats it.
func TestCLIRefusesAConnectionStringThatIsNotAURL(t *testing.T) {
	t.Chdir(t.TempDir())
	const secret = "hunter2-Secret"
	for _, v := range []string{
		"host=db.internal user=alice password=" + secret + " dbname=ledger",
		"  password = '" + secret + "' host=db.internal",
		"postgress://alice:" + secret + "@db.internal/ledger",
		" postgres://alice:" + secret + "@db.internal/ledger",
		"pg://alice:" + secret + "@db.internal/ledger",
	} {
		for _, args := range [][]string{{"demo", "--store", v}, {"ledger", "show", "--store", v}, {"ledger", "recover", "--store", v, "--json"}} {
			code, stdout, stderr := cliEnv(t, nil, args...)
			if code != 2 || !strings.Contains(stderr, "store") {
				t.Fatalf("%v %q: exit %d, %s", args[:2], v, code, stderr)
			}
			for _, enc := range append(encodings(secret), "alice", "db.internal") {
				if strings.Contains(stdout+stderr, enc) {
					t.Fatalf("%v echoes %q: %s%s", args[:2], enc, stdout, stderr)
				}
			}
		}
		code, _, stderr := cliEnv(t, map[string]string{storeEnv: v}, "ledger", "show")
		if code != 2 || strings.Contains(stderr, secret) {
			t.Fatalf("PABLO_STORE %q: exit %d, %s", v, code, stderr)
		}
	}
	if ents, _ := os.ReadDir("."); len(ents) != 0 {
		t.Fatalf("a connection string was created as a file: %v", ents)
	}
}
