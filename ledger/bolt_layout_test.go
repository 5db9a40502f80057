package ledger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func eventRecord(task string, n uint64) Record {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return Record{TaskID: task, N: n, Kind: RecordEvent, Time: at, Event: Event{
		RootSeq: n, Seq: n, RootID: task, AgentID: "a", Type: "tool.output", Time: at,
		Payload: json.RawMessage(`{"type":"tool.output"}`),
	}}
}

// TestBoltKeepsEachBarrierPathShort: a task's records are put into chunk
// buckets of 32, so a commit reads in a short path however long the task,
// and a task written before chunks (its records directly in its bucket)
// still reads in order with the records appended after them (and its last
// record is found, as importing volatile records needs).
func TestBoltKeepsEachBarrierPathShort(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := OpenBolt(path, BoltOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The layout before chunks, written as it was.
	err = db.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.Bucket([]byte(bucketTasks)).CreateBucket([]byte("old"))
		if err != nil {
			return err
		}
		for n := uint64(1); n <= 40; n++ {
			r := eventRecord("old", n)
			v, err := encodeRecord(&r)
			if err != nil {
				return err
			}
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], n)
			if err := bk.Put(k[:], v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const total = 1000
	for n := uint64(41); n <= total; n += 2 {
		for _, task := range []string{"old", "new"} {
			if err := db.Append(ctx, []Record{eventRecord(task, n), eventRecord(task, n+1)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, task := range []string{"old", "new"} {
		recs, err := db.Records(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		want := total
		if task == "new" {
			want = total - 40
		}
		if len(recs) != want {
			t.Fatalf("task %s: %d records, want %d", task, len(recs), want)
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].N != recs[i-1].N+1 {
				t.Fatalf("task %s: record %d follows %d", task, recs[i].N, recs[i-1].N)
			}
		}
	}
	// The new task's bucket holds chunk buckets only, of 32 records each.
	err = db.db.View(func(tx *bolt.Tx) error {
		for _, task := range []string{"old", "new"} {
			if n := lastN(tx.Bucket([]byte(bucketTasks)).Bucket([]byte(task))); n != total {
				t.Errorf("task %s: last record %d, want %d", task, n, total)
			}
		}
		bk := tx.Bucket([]byte(bucketTasks)).Bucket([]byte("new"))
		chunks := 0
		err := bk.ForEach(func(k, v []byte) error {
			if v != nil || len(k) != 9 || k[0] != chunkPrefix {
				t.Errorf("task bucket key %x is not a chunk bucket", k)
				return nil
			}
			chunks++
			if n := bk.Bucket(k).Stats().KeyN; n > 1<<chunkBits {
				t.Errorf("chunk %x holds %d records", k, n)
			}
			return nil
		})
		if want := total>>chunkBits - 41>>chunkBits + 1; chunks != want { // N 41 to 1000
			t.Errorf("%d chunks, want %d", chunks, want)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
