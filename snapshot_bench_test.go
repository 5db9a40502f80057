package pablo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// BenchmarkTaskStartSnapshot is BenchmarkCoreRun (two model calls, one
// fs.read, 32 deltas) with every record written to a MemoryStore, the
// dispatch snapshot among them: on the runtime's shared view, whose
// snapshot is encoded once per runtime, and with a per-task view
// (HostOptions.Ask gates a tool the script never calls, so each task
// decides its own tools and takes its snapshot whole).
func BenchmarkTaskStartSnapshot(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte(strings.Repeat("evidence line\n", 64)), 0o600)
	d := benchDeployment(b, dir, `{"turns":[{"text":["x"],"tool_calls":[{"name":"fs_read","arguments":{"path":"a.txt"}}]},{"text":`+deltas(32, "0123456789abcdef")+`}]}`)
	for _, c := range []struct {
		name string
		ask  []authority.ID
	}{{"shared_view", nil}, {"per_task_view", []authority.ID{authority.FSSearch}}} {
		b.Run(c.name, func(b *testing.B) {
			rt, err := d.NewRuntime(context.Background(), HostOptions{Store: ledger.NewMemoryStore(), Ask: c.ask})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			b.ReportAllocs()
			for b.Loop() {
				if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
					b.Fatal(obj.Outcome.Status)
				}
			}
		})
	}
}
