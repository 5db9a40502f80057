package postgres_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/ledgertest"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// schemaV1 is the schema version 1 as it shipped, before the index.
const schemaV1 = `CREATE TABLE pablo_schema_version (version integer NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
	INSERT INTO pablo_schema_version (version) VALUES (1);
	CREATE TABLE pablo_records (task_id text COLLATE "C" NOT NULL, n bigint NOT NULL CHECK (n > 0), body bytea NOT NULL, digest bytea NOT NULL, PRIMARY KEY (task_id, n));
	CREATE TABLE pablo_results (ref text COLLATE "C" PRIMARY KEY, data bytea NOT NULL);
	CREATE SEQUENCE pablo_fencing_tokens;
	CREATE TABLE pablo_leases (task_id text COLLATE "C" PRIMARY KEY, owner text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL, released boolean NOT NULL DEFAULT false);`

// TestVersion1StoreGetsItsIndexOnMigration: a database written by the
// code before the index (schema version 1) is migrated to version 2 by
// the first writable open, under the migration lock, and its index then
// says what a full read of its records says; a read-only open of it
// refuses, asking for that write.
func TestVersion1StoreGetsItsIndexOnMigration(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	db := dbName(opts)
	task := func(id, root string, session *ledger.SessionLink) ledger.Record {
		return ledger.Record{TaskID: id, N: 1, Kind: ledger.RecordTask, Time: at, Task: &ledger.TaskRecord{TaskID: id, RootAgentID: root, Session: session}}
	}
	group := func(id string, n uint64, pgid int) ledger.Record {
		return ledger.Record{TaskID: id, N: n, Kind: ledger.RecordProcessGroup, Time: at.Add(time.Duration(n) * time.Second),
			ProcessGroup: &ledger.ProcessGroupRecord{AgentID: "root", BootID: "b", Pgid: pgid}}
	}
	finish := func(id string, n uint64, agent string) ledger.Record {
		return ledger.Record{TaskID: id, N: n, Kind: ledger.RecordFinish, Time: at.Add(time.Hour),
			Finish: &ledger.FinishRecord{AgentID: agent, Outcome: ledger.Outcome{Status: "completed"}}}
	}
	recs := []ledger.Record{
		task("a", "root", &ledger.SessionLink{SessionID: "s1", Turn: 1, Prompt: "first"}), group("a", 2, 11), group("a", 3, 12),
		task("b", "root", &ledger.SessionLink{SessionID: "s1", Turn: 2, Prompt: "second"}), group("b", 2, 21), finish("b", 3, "root"),
		task("c", "root", nil), finish("c", 2, "child"), event("c", 3),
		event("d", 1),
	}
	var sql strings.Builder
	sql.WriteString(schemaV1)
	tasks := map[string]bool{}
	for _, r := range recs {
		body, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		fmt.Fprintf(&sql, "\nINSERT INTO pablo_records VALUES ('%s', %d, '\\x%s'::bytea, '\\x%s'::bytea);", r.TaskID, r.N, hex.EncodeToString(body), hex.EncodeToString(sum[:]))
		if !tasks[r.TaskID] {
			tasks[r.TaskID] = true
			fmt.Fprintf(&sql, "\nINSERT INTO pablo_leases VALUES ('%s', 'old-host', nextval('pablo_fencing_tokens'), now(), true);", r.TaskID)
		}
	}
	if out, err := cluster.Psql(bg, db, sql.String()); err != nil {
		t.Fatalf("writing the version 1 store: %v %s", err, out)
	}
	ro := opts
	ro.ReadOnly = true
	if _, err := postgres.Open(bg, ro); err == nil || !strings.Contains(err.Error(), "run a write command once to migrate") {
		t.Fatalf("read-only open of a version 1 store = %v, want a SchemaError asking for a write", err)
	}
	s := openStore(t, opts)
	if v, err := cluster.Psql(bg, db, `SELECT max(version) FROM pablo_schema_version`); err != nil || v != fmt.Sprint(postgres.SchemaVersion) {
		t.Fatalf("schema version after the open = %s, %v", v, err)
	}
	ledgertest.CheckIndex(t, s)
	var pending []string
	for id, err := range s.Pending(bg) {
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, id)
	}
	if !slices.Equal(pending, []string{"a", "c", "d"}) {
		t.Fatalf("pending = %q, want [a c d]", pending)
	}
	var sessions []string
	for st, err := range s.SessionTasks(bg, "s1") {
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, fmt.Sprintf("%s@%d", st.TaskID, st.Updated.Sub(at)/time.Second))
	}
	if !slices.Equal(sessions, []string{"a@3", "b@3600"}) {
		t.Fatalf("session s1 = %q", sessions)
	}
}
