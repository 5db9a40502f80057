package authority

import (
	"errors"
	"slices"
	"testing"
)

// rolesSet requires roles three ways: the records server's configuration
// requires "support-lead"; the ceiling's allow rule for shell.run requires
// "operator" and "oncall"; the memory tool's configuration requires
// "support-lead".
func rolesSet(t *testing.T) *Set {
	t.Helper()
	return mustSet(t, Config{
		Native:          []ID{FSRead, ShellRun},
		Host:            []ID{"memory.write"},
		MCPServers:      map[string]MCPServer{"records": {Roles: []string{"support-lead"}}},
		CapabilityRoles: map[ID][]string{"memory.write": {"support-lead"}},
		Layers: []Layer{{ID: "ceiling", Kind: KindAuthority, Dimensions: map[Dimension]*Rules{
			DimTools: {Default: Allow, Allow: []Rule{
				{ID: "tools.shell", Value: string(ShellRun), Roles: []string{"operator", "oncall"}},
				{ID: "tools.read", Value: string(FSRead)},
				{ID: "tools.memory", Value: "memory.write"},
				{ID: "tools.records", Value: "mcp/records/lookup"},
			}},
		}}},
	})
}

// TestMissingRoleIsADenialNamingIt: each role a capability requires and the
// task does not hold is a denial of its own, typed (ErrRoleMissing) and
// naming the role, with the layer and rule that declared the requirement;
// holding every role admits.
func TestMissingRoleIsADenialNamingIt(t *testing.T) {
	t.Parallel()
	base := rolesSet(t)
	for _, tc := range []struct {
		name        string
		held        []string
		capability  ID
		role        string
		layer, rule string
	}{
		{"server configuration", nil, "mcp/records/lookup", "support-lead", LayerConfiguration, RuleRoleRequired},
		{"capability configuration", []string{"operator"}, "memory.write", "support-lead", LayerConfiguration, RuleRoleRequired},
		{"rule, first role", nil, ShellRun, "operator", "ceiling", "tools.shell"},
		{"rule, second role", []string{"operator"}, ShellRun, "oncall", "ceiling", "tools.shell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := base.WithRolesSet(tc.held)
			if err != nil {
				t.Fatal(err)
			}
			d := set.Decide(Request{Capability: tc.capability})
			if d.Allowed || d.MissingRole != tc.role || d.Layer != tc.layer || d.RuleID != tc.rule {
				t.Fatalf("got %+v, want a denial of role %q by %s/%s", d, tc.role, tc.layer, tc.rule)
			}
			err = d.Err()
			if !errors.Is(err, ErrRoleMissing) || !errors.Is(err, ErrDenied) {
				t.Errorf("error %v is not ErrRoleMissing and ErrDenied", err)
			}
		})
	}
	// A Set no one gave roles holds none.
	if d := base.Decide(Request{Capability: ShellRun}); d.Allowed || d.MissingRole != "operator" {
		t.Errorf("a Set without roles: %+v, want role operator missing", d)
	}
	all, err := base.WithRolesSet([]string{"oncall", "operator", "support-lead"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []ID{"mcp/records/lookup", "memory.write", ShellRun, FSRead} {
		if d := all.Decide(Request{Capability: c}); !d.Allowed {
			t.Errorf("%s with every role: %+v", c, d)
		}
	}
	if d := base.Decide(Request{Capability: FSRead}); !d.Allowed {
		t.Errorf("a capability requiring no role needs none: %+v", d)
	}
	if got := base.MissingRoles(); !slices.Equal(got, []string{"oncall", "operator", "support-lead"}) {
		t.Errorf("MissingRoles = %v", got)
	}
	if got := all.MissingRoles(); len(got) != 0 {
		t.Errorf("MissingRoles with every role = %v", got)
	}
}

// TestChildNeverGainsARole: a child's roles are its parent's, narrowed
// only: a narrowing or a re-binding that names a role the parent does not
// hold is ErrWiden, and a child narrowed to fewer roles is denied what the
// dropped role admitted.
func TestChildNeverGainsARole(t *testing.T) {
	t.Parallel()
	parent, err := rolesSet(t).WithRolesSet([]string{"operator", "oncall"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parent.NarrowSet(Narrowing{ID: "child", Roles: []string{"operator", "support-lead"}}); !errors.Is(err, ErrWiden) {
		t.Errorf("narrowing to a role the parent lacks: %v, want ErrWiden", err)
	}
	if _, err := parent.WithRolesSet([]string{"support-lead"}); !errors.Is(err, ErrWiden) {
		t.Errorf("re-binding to a role the parent lacks: %v, want ErrWiden", err)
	}
	inherited, err := parent.NarrowSet(Narrowing{ID: "child"})
	if err != nil {
		t.Fatal(err)
	}
	if d := inherited.Decide(Request{Capability: ShellRun}); !d.Allowed {
		t.Errorf("a child keeps its parent's roles: %+v", d)
	}
	if d := inherited.Decide(Request{Capability: "mcp/records/lookup"}); d.Allowed {
		t.Errorf("a child gained support-lead: %+v", d)
	}
	fewer, err := parent.NarrowSet(Narrowing{ID: "child", Roles: []string{"operator"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := fewer.Decide(Request{Capability: ShellRun}); d.Allowed || d.MissingRole != "oncall" {
		t.Errorf("a child narrowed to operator: %+v, want oncall missing", d)
	}
	if _, err := fewer.WithRolesSet([]string{"oncall"}); !errors.Is(err, ErrWiden) {
		t.Errorf("a narrowed child re-bound to a dropped role: %v, want ErrWiden", err)
	}
}

// TestRolesAreValidatedAndOnlyOnAllowRules: a role name outside the
// grammar and roles on a deny rule are refused when the Set is built.
func TestRolesAreValidatedAndOnlyOnAllowRules(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Layers: []Layer{{ID: "l", Dimensions: map[Dimension]*Rules{DimTools: {Deny: []Rule{{ID: "d", Value: "fs.read", Roles: []string{"x"}}}}}}}},
		{Layers: []Layer{{ID: "l", Dimensions: map[Dimension]*Rules{DimTools: {Allow: []Rule{{ID: "a", Value: "fs.read", Roles: []string{"Support Lead"}}}}}}}},
		{MCPServers: map[string]MCPServer{"records": {Roles: []string{""}}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted it", cfg)
		}
	}
	if _, err := rolesSet(t).WithRolesSet([]string{"-x"}); err == nil {
		t.Error("WithRoles accepted an invalid role")
	}
}
