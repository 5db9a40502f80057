package pablo

import (
	"testing"

	"github.com/pabloagent/pablo/internal/compaction"
	"github.com/pabloagent/pablo/internal/fstools"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestRootConstantsAreTheEnginesOwn: the root states its constants as
// values, so `go doc pablo` names no internal package, and they stay the
// values the engine uses.
func TestRootConstantsAreTheEnginesOwn(t *testing.T) {
	if CodeArtifactChanged != outcome.FailureCode(fstools.ArtifactChanged) {
		t.Errorf("CodeArtifactChanged is %q, the workspace tools say %q", CodeArtifactChanged, fstools.ArtifactChanged)
	}
	if MaxCompactionsPerTask != compaction.MaxPerTask {
		t.Errorf("MaxCompactionsPerTask is %d, the compactor's ceiling %d", MaxCompactionsPerTask, compaction.MaxPerTask)
	}
}
