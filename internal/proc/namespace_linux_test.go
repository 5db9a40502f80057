package proc_test

import (
	"context"
	"testing"

	"github.com/pabloagent/pablo/internal/proc"
)

// TestUnknownNamespaceInitProbesTheWholeGroup: a NamespaceInit that cannot
// tell (0) leaves the teardown to probe the whole group, which kills and
// proves gone a member the leader left behind.
func TestUnknownNamespaceInitProbesTheWholeGroup(t *testing.T) {
	t.Parallel()
	asked := 0
	p, err := proc.Start(context.Background(), sh("sleep 60 & echo started"), proc.Options{
		MaxStdout:     64,
		NamespaceInit: func() int { asked++; return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil || string(res.Stdout) != "started\n" || asked != 1 {
		t.Fatalf("%+v %v (asked %d)", res, err, asked)
	}
	requireGroupGone(t, res.Pgid)
}
