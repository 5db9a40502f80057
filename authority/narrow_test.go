package authority

import (
	"errors"
	"testing"
)

// narrowParent admits fs.read under docs and src, fs.write under docs and
// src, and both tools of the records server.
func narrowParent(t *testing.T) *Set {
	t.Helper()
	return mustSet(t, Config{Native: []ID{FSRead, FSWrite}, MCPServers: map[string]MCPServer{"records": {}},
		Layers: []Layer{{ID: "ceiling", Kind: KindAuthority, Dimensions: map[Dimension]*Rules{
			DimReadRoots:  {Default: Deny, Allow: []Rule{{ID: "r.docs", Value: "docs"}, {ID: "r.src", Value: "src"}}},
			DimWriteRoots: {Default: Deny, Allow: []Rule{{ID: "w.docs", Value: "docs"}, {ID: "w.src", Value: "src"}}},
			DimMCPTools:   AllowAll(),
		}}}})
}

// TestNarrowedChildDeniesOutsideItsRequestByItsOwnLayer: a child narrowed
// to read roots, write roots or a subset of MCP tools is denied what its
// parent admits but its narrowing left out, and the denial is the child's
// layer's: the narrowing is a layer of its own, not a filter that trusts
// the parent's.
func TestNarrowedChildDeniesOutsideItsRequestByItsOwnLayer(t *testing.T) {
	t.Parallel()
	parent := narrowParent(t)
	for _, tc := range []struct {
		name          string
		n             Narrowing
		inside, outer Request
	}{
		{"read roots", Narrowing{ReadRoots: []string{"docs"}},
			Request{Capability: FSRead, Resources: []Resource{{Kind: ResourceRead, Value: "docs/a.md"}}},
			Request{Capability: FSRead, Resources: []Resource{{Kind: ResourceRead, Value: "src/main.go"}}}},
		{"write roots", Narrowing{WriteRoots: []string{"docs"}},
			Request{Capability: FSWrite, Resources: []Resource{{Kind: ResourceWrite, Value: "docs/a.md"}}},
			Request{Capability: FSWrite, Resources: []Resource{{Kind: ResourceWrite, Value: "src/main.go"}}}},
		{"MCP tool subset", Narrowing{Tools: []ID{"mcp/records/lookup"}, MCPServers: []string{"records"}},
			Request{Capability: "mcp/records/lookup"},
			Request{Capability: "mcp/records/update"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.n.ID = "child"
			child, err := parent.Narrow(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			for _, req := range []Request{tc.inside, tc.outer} {
				if d := parent.Decide(req); !d.Allowed {
					t.Fatalf("the parent denies %+v: %+v", req, d)
				}
			}
			if d := child.Decide(tc.inside); !d.Allowed {
				t.Errorf("the child denies what it asked for: %+v", d)
			}
			d := child.Decide(tc.outer)
			if d.Allowed || d.Layer != "child" {
				t.Errorf("outside its narrowing: got %+v, want a denial by layer \"child\"", d)
			}
		})
	}
}

// TestNarrowingToMoreThanTheParentIsErrWiden: a narrowing that names a read
// root, a write root, a tool, an MCP server or a Skill its parent does not
// admit is refused with ErrWiden, not quietly narrowed.
func TestNarrowingToMoreThanTheParentIsErrWiden(t *testing.T) {
	t.Parallel()
	parent := narrowParent(t)
	for name, n := range map[string]Narrowing{
		"read root":  {ReadRoots: []string{"docs", "secrets"}},
		"parent dir": {ReadRoots: []string{"."}},
		"write root": {WriteRoots: []string{"etc"}},
		"tool":       {Tools: []ID{FSRead, ShellRun}},
		"MCP server": {MCPServers: []string{"records", "ghost"}},
		"MCP tool":   {Tools: []ID{"mcp/ghost/lookup"}},
		"Skill":      {Skills: []ID{"team/review"}},
		"both roots": {ReadRoots: []string{"docs"}, WriteRoots: []string{"src", "bin"}},
	} {
		n.ID = "child"
		if s, err := parent.Narrow(n); !errors.Is(err, ErrWiden) {
			t.Errorf("%s: got %v, %v; want ErrWiden", name, s, err)
		}
	}
}
