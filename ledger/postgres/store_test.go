package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/postgres"
)

var bg = context.Background()

var at = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func event(task string, n uint64) ledger.Record {
	return ledger.Record{TaskID: task, N: n, Kind: ledger.RecordEvent, Time: at,
		Event: ledger.Event{RootSeq: n, Seq: n, RootID: task, AgentID: "root", Type: "e", Time: at}}
}

func taskRecord(task string) ledger.Record {
	return ledger.Record{TaskID: task, N: 1, Kind: ledger.RecordTask, Time: at, Task: &ledger.TaskRecord{TaskID: task, RootAgentID: "root"}}
}

func TestReadOnlyOpenNeverCreatesTheSchema(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	ro := opts
	ro.ReadOnly = true
	_, err := postgres.Open(bg, ro)
	if !errors.Is(err, postgres.ErrNoSchema) || !errors.Is(err, ledger.ErrStore) {
		t.Fatalf("read-only open of an empty database = %v, want ErrNoSchema", err)
	}
	if !strings.Contains(err.Error(), "run a write command") {
		t.Fatalf("the error does not say what to do: %v", err)
	}
	name := opts.URL[strings.LastIndexByte(opts.URL, '/')+1 : strings.IndexByte(opts.URL, '?')]
	out, err := cluster.Psql(bg, name, `SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pablo_%'`)
	if err != nil || out != "0" {
		t.Fatalf("a read-only open created %s tables (%v)", out, err)
	}
	// Once a writable open made it, a read-only open reads and never writes.
	w := openStore(t, opts)
	if err := w.Append(bg, []ledger.Record{taskRecord("t")}); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, ro)
	if recs, err := r.Records(bg, "t"); err != nil || len(recs) != 1 {
		t.Fatalf("read-only Records = %d, %v", len(recs), err)
	}
	if err := r.Append(bg, []ledger.Record{event("t", 2)}); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("read-only Append = %v, want ErrReadOnly", err)
	}
}

func dbName(opts postgres.Options) string {
	return opts.URL[strings.LastIndexByte(opts.URL, '/')+1 : strings.IndexByte(opts.URL, '?')]
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	openStore(t, opts).Close()
	if _, err := cluster.Psql(bg, dbName(opts), fmt.Sprintf(`INSERT INTO pablo_schema_version (version) VALUES (%d)`, postgres.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		o := opts
		o.ReadOnly = ro
		_, err := postgres.Open(bg, o)
		var se *postgres.SchemaError
		if !errors.Is(err, postgres.ErrSchemaVersion) || !errors.As(err, &se) || se.Found != postgres.SchemaVersion+1 {
			t.Fatalf("read-only %v: open of a newer schema = %v, want a SchemaError", ro, err)
		}
		if !strings.Contains(err.Error(), "upgrade Pablo") {
			t.Fatalf("the error does not say what to do: %v", err)
		}
	}
}

func TestTamperedRowsAreDetected(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	s := openStore(t, opts)
	data := []byte(`{"answer":42}`)
	ref := ledger.RefOf(data)
	recs := []ledger.Record{taskRecord("t"), {TaskID: "t", N: 2, Kind: ledger.RecordResult, Time: at, Result: &ledger.ResultRecord{ID: ref, Data: data}}, event("t", 3)}
	if err := s.Append(bg, recs); err != nil {
		t.Fatal(err)
	}
	db := dbName(opts)
	for _, tc := range []struct{ name, sql string }{
		{"a record's bytes", `UPDATE pablo_records SET body = convert_to(replace(convert_from(body, 'UTF8'), '"e"', '"x"'), 'UTF8') WHERE n = 3`},
		{"a record and its digest", `UPDATE pablo_records SET body = convert_to(replace(convert_from(body, 'UTF8'), '42', '43'), 'UTF8'), digest = sha256(convert_to(replace(convert_from(body, 'UTF8'), '42', '43'), 'UTF8')) WHERE n = 2`},
	} {
		if _, err := cluster.Psql(bg, db, tc.sql); err != nil {
			t.Fatal(err)
		}
		_, err := s.Records(bg, "t")
		var te *postgres.TamperError
		if !errors.Is(err, postgres.ErrTampered) || !errors.As(err, &te) || !errors.Is(err, ledger.ErrStore) {
			t.Fatalf("%s changed: Records = %v, want a TamperError", tc.name, err)
		}
		if _, err := cluster.Psql(bg, db, `DELETE FROM pablo_records WHERE n = `+fmt.Sprint(te.N)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cluster.Psql(bg, db, `UPDATE pablo_results SET data = convert_to('{"answer":43}', 'UTF8')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Result(bg, ref); !errors.Is(err, postgres.ErrTampered) {
		t.Fatalf("result changed: Result = %v, want ErrTampered", err)
	}
}

func TestBadURLsAreRefusedWithoutEchoingThem(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pw"
	for _, tc := range []struct {
		url      string
		password bool
	}{
		{"", false},
		{"/var/lib/pablo/ledger.db", false},
		{"mysql://user@host/db", false},
		{"host=/tmp dbname=x password=" + secret, true},
		{"postgres://user:" + secret + "@host/db", true},
		{"postgresql://user:" + secret + "@host/db", true},
		{"postgres://user@host/db?password=" + secret, true},
		{"postgres://user@host/db?PassWord=" + secret, true},
		{"postgres://us%zzer:" + secret + "@host/db", false},
		{"postgres://user@host/db?x=%zz" + secret, false},
		{"postgres://" + strings.Repeat("h", 4097), false},
	} {
		err := postgres.CheckURL(tc.url)
		if !errors.Is(err, postgres.ErrURL) {
			t.Fatalf("CheckURL(%q) = %v, want ErrURL", tc.url, err)
		}
		if errors.Is(err, postgres.ErrPasswordInURL) != tc.password {
			t.Fatalf("CheckURL(%q) = %v: password flag wrong", tc.url, err)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "user") && strings.Contains(tc.url, "user@") && strings.Contains(err.Error(), "user@") {
			t.Fatalf("CheckURL(%q) echoes the URL: %v", tc.url, err)
		}
		if _, err := postgres.Open(bg, postgres.Options{URL: tc.url}); !errors.Is(err, postgres.ErrURL) {
			t.Fatalf("Open(%q) = %v, want ErrURL", tc.url, err)
		}
	}
	for _, ok := range []string{"postgres://host/db", "postgresql://user@host:5433/db?sslmode=disable", "postgres:///db?host=/run/postgresql"} {
		if err := postgres.CheckURL(ok); err != nil {
			t.Fatalf("CheckURL(%q) = %v", ok, err)
		}
	}
}

func TestUnreachableServerAndWrongCredentials(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, err := postgres.Open(ctx, postgres.Options{URL: "postgres://postgres@/db?host=" + dir + "&connect_timeout=5", Password: "x"})
	if !errors.Is(err, ledger.ErrStore) || errors.Is(err, postgres.ErrAuth) {
		t.Fatalf("Open on a socket nobody listens on = %v, want a StoreError", err)
	}
	opts := testDB(t)
	const wrong = "not-the-password-9"
	opts.Password = wrong
	_, err = postgres.Open(ctx, opts)
	if !errors.Is(err, postgres.ErrAuth) || !errors.Is(err, ledger.ErrStore) {
		t.Fatalf("Open with a wrong password = %v, want ErrAuth", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), cluster.Password) {
		t.Fatalf("the error holds a password: %v", err)
	}
	o := testDB(t)
	o.URL = strings.Replace(o.URL, "postgres@", "nobody@", 1)
	if _, err := postgres.Open(ctx, o); !errors.Is(err, postgres.ErrAuth) {
		t.Fatalf("Open as an unknown user = %v, want ErrAuth", err)
	}
}

func TestGroupCommitSharesTransactionsAcrossTasks(t *testing.T) {
	t.Parallel()
	s := openStore(t, testDB(t))
	const tasks, appends = 16, 20
	var wg sync.WaitGroup
	for w := range tasks {
		wg.Go(func() {
			id := fmt.Sprintf("g%02d", w)
			for n := range appends {
				if err := s.Append(bg, []ledger.Record{event(id, uint64(n+1))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if c := s.Commits(); c >= tasks*appends {
		t.Fatalf("%d commits for %d concurrent appends: no transaction carried two tasks' records", c, tasks*appends)
	}
	t.Logf("%d appends in %d commits", tasks*appends, s.Commits())
}
