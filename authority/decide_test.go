package authority

import "testing"

// TestEveryLayerDecidesInOrder: a request is allowed only when every layer
// allows it, and a denial is named by the layer that made it, whichever of
// three layers that is. An approval required by a later layer is kept.
func TestEveryLayerDecidesInOrder(t *testing.T) {
	t.Parallel()
	s := mustSet(t, Config{Native: []ID{FSRead, FSWrite, FSList}, Layers: []Layer{
		{ID: "ceiling", Kind: KindAuthority, Dimensions: map[Dimension]*Rules{
			DimTools: {Default: Allow, Deny: []Rule{{ID: "ceiling.no_list", Value: string(FSList)}}},
		}},
		{ID: "policy", Kind: KindPolicy, Dimensions: map[Dimension]*Rules{
			DimReadRoots: {Default: Deny, Allow: []Rule{{ID: "policy.docs", Value: "docs"}}},
		}},
		{ID: "team", Kind: KindPolicy, Dimensions: map[Dimension]*Rules{
			DimReadRoots:  {Default: Allow, Deny: []Rule{{ID: "team.no_private", Value: "docs/private"}}},
			DimWriteRoots: {Default: Allow, Allow: []Rule{{ID: "team.ask", Value: "docs", Approval: ApprovalRequired}}},
		}},
	}})
	read := func(p string) Request {
		return Request{Capability: FSRead, Resources: []Resource{{Kind: ResourceRead, Value: p}}}
	}
	for _, tc := range []struct {
		name      string
		req       Request
		denyLayer string // "" when allowed
	}{
		{"every layer allows", read("docs/a.md"), ""},
		{"the first layer denies", Request{Capability: FSList}, "ceiling"},
		{"the second layer denies", read("src/a.go"), "policy"},
		{"the third layer denies", read("docs/private/key"), "team"},
	} {
		d := s.Decide(tc.req)
		if tc.denyLayer == "" {
			if !d.Allowed {
				t.Errorf("%s: denied %+v", tc.name, d)
			}
			continue
		}
		if d.Allowed || d.Layer != tc.denyLayer {
			t.Errorf("%s: got %+v, want a denial by %q", tc.name, d, tc.denyLayer)
		}
	}
	d := s.Decide(Request{Capability: FSWrite, Resources: []Resource{{Kind: ResourceWrite, Value: "docs/a.md"}}})
	if !d.Allowed || !d.NeedsApproval || d.ApprovalBy == nil || d.ApprovalBy.Layer != "team" {
		t.Fatalf("the third layer's approval requirement was lost: %+v", d)
	}
}
