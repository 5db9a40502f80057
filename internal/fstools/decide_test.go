package fstools

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// TestDecideIsWhatCallDecides: for every path, Decide denies exactly when
// Call is denied, with the same layer and rule, and allows with the
// decision over the path otherwise (a missing path is no policy matter).
func TestDecideIsWhatCallDecides(t *testing.T) {
	f := newFixture(t, Options{Write: true, Decide: func(kind authority.ResourceKind, rel string) authority.Decision {
		if isPrivate(rel) {
			return authority.Decision{Layer: "policy", RuleID: "no.private"}
		}
		return authority.Decision{Allowed: true, Layer: "policy", RuleID: "read.all"}
	}})
	f.write("docs/a.md", "a\n")
	f.write("private/k", "k\n")
	f.symlink("docs/a.md", "link.md")
	f.symlink(f.outside, "out")
	f.symlink("docs", "docs2")
	for _, c := range []struct {
		tool authority.ID
		path string
	}{
		{authority.FSRead, "docs/a.md"}, {authority.FSRead, "../outside/secret.txt"}, {authority.FSRead, f.outside + "/secret.txt"},
		{authority.FSRead, "link.md"}, {authority.FSRead, "out/secret.txt"}, {authority.FSList, "docs2"}, {authority.FSList, "docs2/."},
		{authority.FSRead, "private/k"}, {authority.FSRead, "missing/x"}, {authority.FSRead, "docs/a.md/x"}, {authority.FSList, "."},
		{authority.FSWrite, "docs/new.md"}, {authority.FSWrite, "link.md"}, {authority.FSWrite, "private/new"},
	} {
		args, _ := json.Marshal(map[string]any{"path": c.path, "text": "", "expected_revision": nil})
		if c.tool != authority.FSWrite {
			args, _ = json.Marshal(map[string]any{"path": c.path})
		}
		d, err := f.tools.Decide(bg(), c.tool, args)
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.path, err)
		}
		_, callErr := f.tools.Call(bg(), c.tool, args)
		var de *DeniedError
		denied := errors.As(callErr, &de)
		if d.Allowed == denied {
			t.Errorf("%s %q: Decide says %+v, Call says %v", c.tool, c.path, d, callErr)
			continue
		}
		if denied && (d.Layer != de.Decision.Layer || d.RuleID != de.Decision.RuleID) {
			t.Errorf("%s %q: Decide denies by %s/%s, Call by %s/%s", c.tool, c.path, d.Layer, d.RuleID, de.Decision.Layer, de.Decision.RuleID)
		}
		if !denied && (d.Layer != "policy" || d.RuleID != "read.all") {
			t.Errorf("%s %q: allowed by %+v, want the path's decision", c.tool, c.path, d)
		}
	}
}

// isPrivate reports whether rel lies under "private".
func isPrivate(rel string) bool { return authority.WithinRoot("private", rel) }
