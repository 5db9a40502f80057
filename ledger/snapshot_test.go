package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func sampleSnapshot() *Snapshot {
	return &Snapshot{Version: SnapshotVersion, Fingerprint: "sha256:" + strings.Repeat("a", 64), Admitted: []SnapshotEntry{
		{ID: "model", Kind: "model", Attributes: map[string]string{"provider": "script", "model": "script"}},
		{ID: "tool:fs.read", Kind: "tool", Layer: "configuration", Rule: "builtin.configured", Attributes: map[string]string{"digest": "sha256:" + strings.Repeat("b", 64)}},
		// What HTML escaping would rewrite: the bytes must be stored as digested.
		{ID: "tool:host.<&>", Kind: "tool", Attributes: map[string]string{"sandbox": "required filesystem=read-only network=deny", "note": "a<b & c>d \u2028"}},
	}}
}

// A snapshot's canonical form reads back as the same snapshot, through
// every store, and its digest is sha256 over exactly those bytes.
func TestSnapshotRecordRoundTripsThroughEveryStore(t *testing.T) {
	canonical, digest, err := EncodeSnapshot(sampleSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if RefOf(canonical) != digest || !bytes.Contains(canonical, []byte("<&>")) {
		t.Fatalf("digest %s over %s", digest, canonical)
	}
	// The hand-written form is the canonical form of what encoding/json
	// writes.
	marshalled, _ := json.Marshal(sampleSnapshot())
	if want, err := Canonical(marshalled); err != nil || !bytes.Equal(want, canonical) {
		t.Fatalf("EncodeSnapshot wrote\n%s\nthe canonical form is\n%s (%v)", canonical, want, err)
	}
	bolt, err := OpenBolt(filepath.Join(t.TempDir(), "l.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	for name, store := range map[string]Store{"memory": NewMemoryStore(), "bolt": bolt} {
		ctx := context.Background()
		root, err := NewRoot(ctx, Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		if err := root.RecordSnapshot(ctx, root.RootAgentID(), canonical, digest); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := root.Finish(ctx, root.RootAgentID(), Finish{Outcome: Outcome{Status: "completed"}}); err != nil {
			t.Fatal(err)
		}
		rep, err := RecoverTask(ctx, store, root.ID())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Snapshots) != 1 || rep.Snapshots[0].Snapshot == nil || rep.SnapshotDigest != string(digest) {
			t.Fatalf("%s: snapshots %+v, digest %q", name, rep.Snapshots, rep.SnapshotDigest)
		}
		again, _, _ := EncodeSnapshot(rep.Snapshots[0].Snapshot)
		if !bytes.Equal(again, canonical) {
			t.Fatalf("%s: read back as %s, want %s", name, again, canonical)
		}
	}
}

// A record that was altered reads back as a typed error, never as a
// snapshot: a changed byte, a changed digest, a non-canonical form, an
// unknown member, another version.
func TestTamperedSnapshotRecordIsATypedError(t *testing.T) {
	canonical, digest, err := EncodeSnapshot(sampleSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	type tamper struct {
		data   []byte
		digest ResultRef
		field  string
	}
	// rehashed is a record whose digest was recomputed over altered bytes:
	// the form itself must give it away.
	rehashed := func(data, field string) tamper { return tamper{[]byte(data), RefOf([]byte(data)), field} }
	for name, c := range map[string]tamper{
		"a changed byte":      {bytes.Replace(canonical, []byte("builtin.configured"), []byte("builtin.c0nfigured"), 1), digest, "digest"},
		"another digest":      {canonical, RefOf([]byte("{}")), "digest"},
		"whitespace":          rehashed(" "+string(canonical), "canonical form"),
		"an unknown member":   rehashed(`{"admitted":[],"extra":1,"version":1}`, "snapshot"),
		"another version":     rehashed(`{"admitted":[],"version":2}`, "version"),
		"unsorted entries":    rehashed(`{"admitted":[{"id":"b","kind":"tool"},{"id":"a","kind":"tool"}],"version":1}`, "admitted[1].id"),
		"an empty layer":      rehashed(`{"admitted":[{"id":"a","kind":"tool","layer":""}],"version":1}`, "canonical form"),
		"no admitted list":    rehashed(`{"version":1}`, "admitted"),
		"a case-folded field": rehashed(`{"ADMITTED":[],"version":1}`, "canonical form"),
		"trailing data":       rehashed(`{"admitted":[],"version":1}{}`, "snapshot"),
	} {
		s, err := DecodeSnapshot(c.data, c.digest)
		var se *SnapshotError
		if s != nil || !errors.As(err, &se) || !errors.Is(err, ErrInvalid) || se.Field != c.field {
			t.Errorf("%s: snapshot %v, error %v (field %q, want %q)", name, s, err, fieldOf(se), c.field)
		}
	}
	// The ledger refuses to record one, and a store holding one reports it
	// without failing the rest of the task's recovery.
	ctx := context.Background()
	store := NewMemoryStore()
	root, _ := NewRoot(ctx, Options{Store: store})
	if err := root.RecordSnapshot(ctx, root.RootAgentID(), canonical, RefOf([]byte("{}"))); !errors.Is(err, ErrInvalid) {
		t.Fatalf("recording a snapshot under another digest: %v", err)
	}
	trusted, _ := NewRoot(ctx, Options{Store: store, TrustedPayloads: true})
	if err := trusted.RecordSnapshot(ctx, trusted.RootAgentID(), canonical, RefOf([]byte("{}"))); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a trusted root recorded a snapshot under another digest: %v", err)
	}
	store.Append(ctx, []Record{{TaskID: root.ID(), N: 3, Kind: RecordSnapshot, Snapshot: &SnapshotRecord{AgentID: root.RootAgentID(), Digest: digest, Snapshot: strings.Replace(string(canonical), "script", "SCRIPT", 1)}}})
	rep, err := RecoverTask(ctx, store, root.ID())
	if err != nil || len(rep.Snapshots) != 1 || rep.Snapshots[0].Snapshot != nil || !strings.Contains(rep.Snapshots[0].Invalid, "altered") {
		t.Fatalf("a tampered record in the store: %+v, %v", rep.Snapshots, err)
	}
}

func fieldOf(e *SnapshotError) string {
	if e == nil {
		return ""
	}
	return e.Field
}

// Each bound holds at its limit and refuses one past it.
func TestSnapshotBounds(t *testing.T) {
	entries := func(n int) []SnapshotEntry {
		out := make([]SnapshotEntry, n)
		for i := range out {
			out[i] = SnapshotEntry{ID: "tool:t" + strconv.Itoa(100000+i), Kind: "tool"}
		}
		return out
	}
	attrs := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m["k"+strconv.Itoa(i)] = "v"
		}
		return m
	}
	long := strings.Repeat("x", MaxSnapshotString)
	for name, c := range map[string]struct {
		ok, over *Snapshot
		field    string
	}{
		"entries": {&Snapshot{Version: 1, Admitted: entries(MaxSnapshotEntries)}, &Snapshot{Version: 1, Admitted: entries(MaxSnapshotEntries + 1)}, "admitted"},
		"attributes": {&Snapshot{Version: 1, Admitted: []SnapshotEntry{{ID: "a", Kind: "tool", Attributes: attrs(MaxSnapshotAttributes)}}},
			&Snapshot{Version: 1, Admitted: []SnapshotEntry{{ID: "a", Kind: "tool", Attributes: attrs(MaxSnapshotAttributes + 1)}}}, "admitted[0].attributes"},
		"a string": {&Snapshot{Version: 1, Admitted: []SnapshotEntry{{ID: long, Kind: "tool"}}},
			&Snapshot{Version: 1, Admitted: []SnapshotEntry{{ID: long + "x", Kind: "tool"}}}, "admitted[0].id"},
		"bytes": {&Snapshot{Version: 1, Admitted: bigEntries(MaxSnapshotBytes, 0)}, &Snapshot{Version: 1, Admitted: bigEntries(MaxSnapshotBytes, 1)}, "snapshot"},
	} {
		canonical, digest, err := EncodeSnapshot(c.ok)
		if err != nil {
			t.Errorf("%s at the limit: %v", name, err)
		} else if _, err := DecodeSnapshot(canonical, digest); err != nil {
			t.Errorf("%s at the limit does not read back: %v", name, err)
		}
		_, _, err = EncodeSnapshot(c.over)
		var se *SnapshotError
		if !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("%s one past the limit: %v (field %q, want %q)", name, err, fieldOf(se), c.field)
		}
	}
	over := bytes.Repeat([]byte(" "), MaxSnapshotBytes+1)
	if _, err := DecodeSnapshot(over, RefOf(over)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a record one byte past the bound: %v", err)
	}
}

// bigEntries are entries whose snapshot's canonical form is exactly
// limit+extra bytes.
func bigEntries(limit, extra int) []SnapshotEntry {
	var out []SnapshotEntry
	size := func() int {
		b, _, err := EncodeSnapshot(&Snapshot{Version: 1, Admitted: out})
		if err != nil {
			var se *SnapshotError
			if errors.As(err, &se) && se.Field == "snapshot" {
				return limit + 1 // only the byte bound refused it
			}
			panic(err)
		}
		return len(b)
	}
	empty, _, _ := EncodeSnapshot(&Snapshot{Version: 1, Admitted: []SnapshotEntry{}})
	n := len(empty)
	for i := 0; ; i++ {
		// One entry of a full-length ID: {"id":"...","kind":"tool"} and a comma.
		e := SnapshotEntry{ID: strconv.Itoa(100000+i) + strings.Repeat("x", MaxSnapshotString-6), Kind: "tool"}
		cost := len(`{"id":"","kind":"tool"}`) + len(e.ID)
		if len(out) > 0 {
			cost++
		}
		if n+cost > limit+extra {
			rest := limit + extra - n
			if rest > 0 {
				// A last entry sized to end exactly at the target.
				pad := rest - len(`,{"id":"","kind":"tool"}`) - 6
				out = append(out, SnapshotEntry{ID: strconv.Itoa(100000+i) + strings.Repeat("y", pad), Kind: "tool"})
			}
			break
		}
		out = append(out, e)
		n += cost
	}
	if got := size(); got != limit+extra && !(extra > 0 && got == limit+1) {
		panic("bigEntries: " + strconv.Itoa(got))
	}
	return out
}

// FuzzDecodeSnapshot: no input makes DecodeSnapshot panic; whatever it
// accepts encodes back to exactly the same bytes and digest.
func FuzzDecodeSnapshot(f *testing.F) {
	canonical, _, _ := EncodeSnapshot(sampleSnapshot())
	f.Add(canonical)
	f.Add([]byte(`{"admitted":[],"version":1}`))
	f.Add([]byte(`{"admitted":[{"id":"a","kind":"tool","attributes":{"":"x"}}],"version":1}`))
	f.Add([]byte(`{"admitted":[{"id":"a","kind":"tool","layer":""}],"version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSnapshot(data, RefOf(data))
		if err != nil {
			var se *SnapshotError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("an untyped error: %v", err)
			}
			return
		}
		again, digest, err := EncodeSnapshot(s)
		if err != nil || !bytes.Equal(again, data) || digest != RefOf(data) {
			t.Fatalf("accepted %q, which encodes as %q (%v)", data, again, err)
		}
	})
}
