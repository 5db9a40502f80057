package postgres_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBoltHostsDoNotLinkPgx: a host that keeps its ledger in bbolt imports
// the root package and ledger; neither may link pgx, which only this
// package brings.
func TestBoltHostsDoNotLinkPgx(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"github.com/pabloagent/pablo", "github.com/pabloagent/pablo/ledger"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/jackc/") || strings.HasSuffix(dep, "/ledger/postgres") {
				t.Errorf("%s links %s: a bbolt host must not link the PostgreSQL store", pkg, dep)
			}
		}
	}
}
