package acp_test

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
)

// TestSessionRolesComeFromMetaAndOnlyNarrow: a session's roles are
// _meta["pablo/v2"].roles on session/new, through the wire to the tasks
// its prompts start. Under a host that gives support-lead and auditor, a
// session naming support-lead holds that one alone, a session naming none
// holds both, and a role the host did not give or a malformed list is
// invalid params: a client never gains a role.
func TestSessionRolesComeFromMetaAndOnlyNarrow(t *testing.T) {
	t.Parallel()
	seen := metaNarrows(t, pablo.SessionOptions{Roles: []string{"support-lead", "auditor"}}, "roles",
		func(ti pablo.TaskInfo) string { return strings.Join(ti.Roles, "+") },
		[]any{[]any{"admin"}, "support-lead", []any{7}, []any{"Two Words"}}, []any{"support-lead"})
	if got := strings.Join(seen, ","); got != "support-lead,support-lead+auditor" {
		t.Errorf("the prompts' tasks held roles %q, want support-lead, then support-lead+auditor", got)
	}
}
