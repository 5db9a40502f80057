package ledger

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestReadOnlyBoltNeverCreatesOrWrites: a read-only open of a missing file
// fails with fs.ErrNotExist and creates nothing; a bbolt file without the
// ledger's buckets is not a ledger; appends are refused.
func TestReadOnlyBoltNeverCreatesOrWrites(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := OpenBolt(missing, BoltOptions{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrStore) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("a read-only open created the file")
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := OpenBolt(foreign, BoltOptions{ReadOnly: true}); err == nil {
		t.Fatal("a bbolt file without the ledger's buckets opened as a ledger")
	}
	path := filepath.Join(dir, "ledger.db")
	rw, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenBolt(path, BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ids, err := ro.Tasks(context.Background()); err != nil || len(ids) != 0 {
		t.Fatalf("tasks of an empty ledger: %v %v", ids, err)
	}
	err = ro.Append(context.Background(), []Record{{TaskID: "t", N: 1}})
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("append to a read-only store: %v", err)
	}
}
