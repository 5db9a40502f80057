package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

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
	code := m.Run()
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
	for _, args := range [][]string{{"ledger", "recover", "--store", u}, {"ledger", "recover", "--store", u, "live-task"}, {"ledger", "show", "--store", u}} {
		code, _, stderr := cliEnv(t, env, args...)
		if code != 3 || !strings.Contains(stderr, "lease live") {
			t.Fatalf("%v on a live task: exit %d, %s", args, code, stderr)
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
