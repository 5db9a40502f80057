package authority_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// TestApprovalRuleIsNeverHidden: when several allow rules of one set
// match a value, one that requires approval asks even when an earlier
// match does not; a value only the plain rule covers does not ask.
func TestApprovalRuleIsNeverHidden(t *testing.T) {
	set, err := authority.New(authority.Config{Native: []authority.ID{authority.FSWrite}, Layers: []authority.Layer{{
		ID: "ops", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			authority.DimWriteRoots: {Default: authority.Deny, Allow: []authority.Rule{
				{ID: "ops.all", Value: "."}, {ID: "ops.release", Value: "release", Approval: authority.ApprovalRequired}}},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		rule string
	}{{"release/v1.txt", "ops.release"}, {"release", "ops.release"}, {"releases.txt", ""}, {"src/a.go", ""}} {
		d := set.Decide(authority.Request{Capability: authority.FSWrite, Resources: []authority.Resource{{Kind: authority.ResourceWrite, Value: c.path}}})
		if !d.Allowed {
			t.Fatalf("%s denied: %+v", c.path, d)
		}
		got := ""
		if d.ApprovalBy != nil {
			got = d.ApprovalBy.RuleID
		}
		if got != c.rule || d.NeedsApproval != (c.rule != "") || d.RuleID != "ops.all" {
			t.Errorf("%s: %+v (by %q), want approval by %q under the allowing rule ops.all", c.path, d, got, c.rule)
		}
	}
}

// TestApprovalValueIsChecked: a host building a Set by hand gets the
// config's rule: "required" or nothing, and never on a deny rule.
func TestApprovalValueIsChecked(t *testing.T) {
	for _, c := range []struct {
		name  string
		rules authority.Rules
		want  string
	}{
		{"UnknownValue", authority.Rules{Default: authority.Deny, Allow: []authority.Rule{{ID: "r", Value: "fs.write", Approval: "none"}}}, `approval must be "required" or absent`},
		{"OnADenyRule", authority.Rules{Default: authority.Allow, Deny: []authority.Rule{{ID: "r", Value: "fs.write", Approval: authority.ApprovalRequired}}}, "allow rules only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := authority.New(authority.Config{Layers: []authority.Layer{{ID: "ops", Kind: authority.KindAuthority,
				Dimensions: map[authority.Dimension]*authority.Rules{authority.DimTools: &c.rules}}}})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `layer "ops"`) {
				t.Fatalf("err %v, want one naming the layer and saying %q", err, c.want)
			}
		})
	}
}

// TestRequireApprovalKeepsTheFirstSource: a later requirement adds no
// source, and a denied decision never asks.
func TestRequireApprovalKeepsTheFirstSource(t *testing.T) {
	d := authority.Decision{Allowed: true}
	d.RequireApproval("ops", "ops.shell")
	d.RequireApproval("host", "host.ask")
	if !d.NeedsApproval || *d.ApprovalBy != (authority.ApprovalSource{Layer: "ops", RuleID: "ops.shell"}) {
		t.Errorf("%+v", d)
	}
	denied := authority.Decision{}
	denied.RequireApproval("ops", "ops.shell")
	if denied.NeedsApproval || denied.ApprovalBy != nil {
		t.Errorf("a denied decision asks: %+v", denied)
	}
	if src := authority.ApprovalSourceOf(authority.Decision{Allowed: true, NeedsApproval: true}); src.RuleID != authority.RuleApproval {
		t.Errorf("an unnamed requirement is %+v, want builtin.approval", src)
	}
}

// A rule with approval = "required" allows a call that then waits for the
// task's approver; the decision names the rule that asked.
func ExampleDecision_RequireApproval() {
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.ShellRun}, Layers: []authority.Layer{{
		ID: "ops", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			authority.DimTools: {Default: authority.Deny, Allow: []authority.Rule{{ID: "ops.shell", Value: "shell.run", Approval: authority.ApprovalRequired}}},
		}}}})
	d := set.Decide(authority.Request{Capability: authority.ShellRun})
	fmt.Println(d.Allowed, d.NeedsApproval, authority.ApprovalSourceOf(d).Layer, authority.ApprovalSourceOf(d).RuleID)
	// A host adding its own question keeps the rule's as the source.
	d.RequireApproval("host", "host.ask")
	fmt.Println(d.ApprovalBy.RuleID)
	// Output:
	// true true ops ops.shell
	// ops.shell
}
