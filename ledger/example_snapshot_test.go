package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/ledger"
)

// ExampleDecodeSnapshot records an agent's dispatch snapshot, reads it
// back from the store as recovery does, and shows that a record altered in
// one byte no longer reads back.
func ExampleDecodeSnapshot() {
	ctx := context.Background()
	store := ledger.NewMemoryStore()
	root, _ := ledger.NewRoot(ctx, ledger.Options{Store: store})
	snap := &ledger.Snapshot{Version: ledger.SnapshotVersion, Admitted: []ledger.SnapshotEntry{
		{ID: "model", Kind: "model", Attributes: map[string]string{"provider": "script", "model": "script"}},
		{ID: "tool:fs.read", Kind: "tool", Layer: "configuration", Rule: "builtin.configured"},
	}}
	canonical, digest, err := ledger.EncodeSnapshot(snap)
	if err != nil {
		panic(err)
	}
	if err := root.RecordSnapshot(ctx, root.RootAgentID(), canonical, digest); err != nil {
		panic(err)
	}
	root.Flush(ctx)
	rep, _ := ledger.RecoverTask(ctx, store, root.ID())
	for _, e := range rep.Snapshots[0].Snapshot.Admitted {
		fmt.Printf("%s (%s) layer=%q rule=%q\n", e.ID, e.Kind, e.Layer, e.Rule)
	}
	fmt.Println(string(canonical))

	altered := bytes.Replace(canonical, []byte("configuration"), []byte("c0nfiguration"), 1)
	_, err = ledger.DecodeSnapshot(altered, digest)
	var se *ledger.SnapshotError
	fmt.Println(errors.As(err, &se), se.Field, errors.Is(err, ledger.ErrInvalid))
	// Output:
	// model (model) layer="" rule=""
	// tool:fs.read (tool) layer="configuration" rule="builtin.configured"
	// {"admitted":[{"attributes":{"model":"script","provider":"script"},"id":"model","kind":"model"},{"id":"tool:fs.read","kind":"tool","layer":"configuration","rule":"builtin.configured"}],"version":1}
	// true digest true
}
