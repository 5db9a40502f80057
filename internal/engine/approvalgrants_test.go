package engine

import (
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// TestTaskGrantNeverCoversAnotherEffect: a grant covers the same
// capability, effect and resources only; a call of the same capability
// and resources with another effect (a stdio MCP server whose sandbox
// allows the network, say) asks again.
func TestTaskGrantNeverCoversAnotherEffect(t *testing.T) {
	res := []authority.Resource{{Kind: authority.ResourceWrite, Value: "a.txt"}}
	var g approvalGrants
	g.add(authority.NewApprovalGrant("mcp/rec/put", authority.EffectExecute, res, "sha256:1"), true)
	for _, c := range []struct {
		name  string
		grant authority.ApprovalGrant
		want  bool
	}{
		{"Same", authority.NewApprovalGrant("mcp/rec/put", authority.EffectExecute, res, "sha256:2"), true},
		{"OtherEffect", authority.NewApprovalGrant("mcp/rec/put", authority.EffectNetwork, res, "sha256:1"), false},
		{"OtherResource", authority.NewApprovalGrant("mcp/rec/put", authority.EffectExecute, []authority.Resource{{Kind: authority.ResourceWrite, Value: "b.txt"}}, "sha256:1"), false},
		{"OtherCapability", authority.NewApprovalGrant("mcp/rec/get", authority.EffectExecute, res, "sha256:1"), false},
		{"MoreResources", authority.NewApprovalGrant("mcp/rec/put", authority.EffectExecute, append(res, authority.Resource{Kind: authority.ResourceWrite, Value: "b.txt"}), "sha256:1"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, found := g.covers(c.grant); found != c.want {
				t.Errorf("covered %v, want %v", found, c.want)
			}
		})
	}
}
