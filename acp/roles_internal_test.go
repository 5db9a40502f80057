package acp

import (
	"slices"
	"testing"
)

// TestSessionRolesAreReadFromMeta: a session's roles are
// _meta["pablo/v2"].roles, an array of strings; absent means the host's
// roles, and anything else is invalid params.
func TestSessionRolesAreReadFromMeta(t *testing.T) {
	if roles, e := sessionRoles(nil); roles != nil || e != nil {
		t.Errorf("no _meta: %v %v", roles, e)
	}
	if roles, e := sessionRoles(map[string]any{ExtV2: map[string]any{"roles": []any{"oncall", "support-lead"}}}); e != nil || !slices.Equal(roles, []string{"oncall", "support-lead"}) {
		t.Errorf("two roles: %v %v", roles, e)
	}
	if roles, e := sessionRoles(map[string]any{ExtV2: map[string]any{"roles": []any{}}}); e != nil || roles == nil || len(roles) != 0 {
		t.Errorf("no role at all: %v %v", roles, e)
	}
	for _, bad := range []any{"oncall", []any{1}, make([]any, 17)} {
		if _, e := sessionRoles(map[string]any{ExtV2: map[string]any{"roles": bad}}); e == nil {
			t.Errorf("roles %v accepted", bad)
		}
	}
}

// TestSessionKindIsReadFromMeta: a session's task kind is
// _meta["pablo/v2"].kind, a string; absent means the host's kind, and
// anything else is invalid params (whether the kind is valid, and the
// host's, is the session handler's to say).
func TestSessionKindIsReadFromMeta(t *testing.T) {
	if kind, e := sessionKind(nil); kind != "" || e != nil {
		t.Errorf("no _meta: %q %v", kind, e)
	}
	if kind, e := sessionKind(map[string]any{ExtV2: map[string]any{"kind": "review"}}); e != nil || kind != "review" {
		t.Errorf("a kind: %q %v", kind, e)
	}
	for _, bad := range []any{[]any{"review"}, 1, nil} {
		if _, e := sessionKind(map[string]any{ExtV2: map[string]any{"kind": bad}}); e == nil {
			t.Errorf("kind %v accepted", bad)
		}
	}
}
