package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pabloagent/pablo/ledger"
)

// Schema errors.
var (
	// ErrNoSchema: the database holds no Pablo ledger schema, and the store
	// was opened read-only, which never creates one. Run a write command
	// (pablo run --store URL) once, or open the store writable.
	ErrNoSchema = errors.New("ledger/postgres: no ledger schema in the database")
	// ErrSchemaVersion: the database's schema version is not the one this
	// code writes: newer (written by a later Pablo: upgrade this host), or
	// older and the store read-only (a write command migrates it).
	ErrSchemaVersion = errors.New("ledger/postgres: ledger schema version not supported")
)

// SchemaError reports a schema the store cannot use. Found is the
// database's version (0 when there is no schema), Supported this code's.
type SchemaError struct {
	Found, Supported int
}

func (e *SchemaError) Error() string {
	switch {
	case e.Found == 0:
		return "ledger/postgres: the database holds no ledger schema and the store was opened read-only; run a write command (for example pablo run --store URL) once to create it"
	case e.Found > e.Supported:
		return fmt.Sprintf("ledger/postgres: the database's ledger schema is version %d, newer than version %d this code knows; upgrade Pablo on this host (its data is left untouched)", e.Found, e.Supported)
	}
	return fmt.Sprintf("ledger/postgres: the database's ledger schema is version %d, older than version %d; a read-only open never migrates it: run a write command once to migrate", e.Found, e.Supported)
}

// Is matches ErrNoSchema when there is no schema, ErrSchemaVersion
// otherwise, and ledger.ErrStore always.
func (e *SchemaError) Is(target error) bool {
	switch target {
	case ErrNoSchema:
		return e.Found == 0
	case ErrSchemaVersion:
		return e.Found != 0
	case ledger.ErrStore:
		return true
	}
	return false
}

// migrations are the schema's versions: migrations[i] takes a database
// from version i to i+1. Append only; never edit one that has shipped.
//
// Every text key is COLLATE "C" so that the database orders task IDs as
// Go orders strings (bytewise). Record bodies and results are bytea: the
// exact bytes that were written, which the content address and the
// record digest are checked against on every read.
var migrations = []string{
	// 1: records, results, leases.
	`CREATE TABLE pablo_records (
		task_id text COLLATE "C" NOT NULL,
		n bigint NOT NULL CHECK (n > 0),
		body bytea NOT NULL,
		digest bytea NOT NULL,
		PRIMARY KEY (task_id, n)
	);
	CREATE TABLE pablo_results (
		ref text COLLATE "C" PRIMARY KEY,
		data bytea NOT NULL
	);
	CREATE SEQUENCE pablo_fencing_tokens;
	CREATE TABLE pablo_leases (
		task_id text COLLATE "C" PRIMARY KEY,
		owner text NOT NULL,
		token bigint NOT NULL,
		expires_at timestamptz NOT NULL,
		released boolean NOT NULL DEFAULT false
	);`,
	// 2: the index of what needs attention (see index.go), filled from the
	// records a version 1 store holds. Its rows are keys: what they name
	// is read from pablo_records, checked against its digest.
	`CREATE TABLE pablo_pending (
		task_id text COLLATE "C" PRIMARY KEY,
		root_agent text COLLATE "C" NOT NULL
	);
	CREATE TABLE pablo_groups (
		task_id text COLLATE "C" NOT NULL,
		n bigint NOT NULL,
		PRIMARY KEY (task_id, n)
	);
	CREATE TABLE pablo_sessions (
		session_id text COLLATE "C" NOT NULL,
		turn bigint NOT NULL,
		task_id text COLLATE "C" NOT NULL,
		n bigint NOT NULL,
		PRIMARY KEY (session_id, turn, task_id, n)
	);
	CREATE TEMPORARY TABLE pablo_v1_records ON COMMIT DROP AS
		SELECT task_id, n, convert_from(body, 'UTF8')::jsonb AS j FROM pablo_records;
	CREATE TEMPORARY TABLE pablo_v1_roots ON COMMIT DROP AS
		SELECT DISTINCT ON (task_id) task_id, n, coalesce(j #>> '{task,root_agent_id}', '') AS root
		FROM pablo_v1_records WHERE j->>'kind' = 'task' AND jsonb_typeof(j->'task') = 'object'
		ORDER BY task_id, n;
	INSERT INTO pablo_pending (task_id, root_agent)
		SELECT t.task_id, coalesce(r.root, '')
		FROM (SELECT DISTINCT task_id FROM pablo_records) t LEFT JOIN pablo_v1_roots r USING (task_id)
		WHERE NOT EXISTS (SELECT 1 FROM pablo_v1_records f
			WHERE f.task_id = t.task_id AND f.j->>'kind' = 'finish' AND jsonb_typeof(f.j->'finish') = 'object'
			AND coalesce(f.j #>> '{finish,agent_id}', '') = coalesce(r.root, '') AND f.n > coalesce(r.n, 0));
	INSERT INTO pablo_groups (task_id, n)
		SELECT g.task_id, g.n FROM pablo_v1_records g JOIN pablo_pending p USING (task_id)
		WHERE g.j->>'kind' = 'process_group' AND jsonb_typeof(g.j->'process_group') = 'object';
	INSERT INTO pablo_sessions (session_id, turn, task_id, n)
		SELECT coalesce(j #>> '{task,session,session_id}', ''), coalesce((j #>> '{task,session,turn}')::bigint, 0), task_id, n
		FROM pablo_v1_records WHERE j->>'kind' = 'task' AND jsonb_typeof(j #> '{task,session}') = 'object';`,
}

// SchemaVersion is the schema version this code writes.
const SchemaVersion = 2

// migrateLock keys the advisory lock that serializes migrations across
// every process opening the same database.
const migrateLock = 0x7061626c6f // "pablo"

// migrate creates or migrates the schema, one transaction per run under
// an advisory lock, and refuses a database newer than the code.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS pablo_schema_version (
		version integer NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	var found int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM pablo_schema_version`).Scan(&found); err != nil {
		return err
	}
	if found > SchemaVersion {
		return &SchemaError{Found: found, Supported: SchemaVersion}
	}
	for v := found; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migration to version %d: %w", v+1, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pablo_schema_version (version) VALUES ($1)`, v+1); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// checkSchema is the read-only open's check: the schema must exist at
// exactly this code's version. It writes nothing.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('pablo_schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return &SchemaError{Supported: SchemaVersion}
	}
	var found int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM pablo_schema_version`).Scan(&found)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if found != SchemaVersion {
		return &SchemaError{Found: found, Supported: SchemaVersion}
	}
	return nil
}
