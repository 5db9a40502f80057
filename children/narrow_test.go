package children

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

func TestNarrowKeepsExactInheritedNames(t *testing.T) {
	t.Parallel()
	p := parentScope()
	got, err := Narrow(p, Scope{Capabilities: Capabilities{Tools: []string{"fs.read", "mcp/records/get"}, MCPServers: []string{"records"}, ModelRoute: []string{"primary", "cheap"}},
		Ceilings: Ceilings{MaxModelCalls: ledger.Max(5), MaxToolCalls: ledger.Max(500)}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Capabilities.Tools, []string{"fs.read", "mcp/records/get"}) || !slices.Equal(got.Capabilities.ModelRoute, []string{"primary", "cheap"}) ||
		!slices.Equal(got.Capabilities.Skills, p.Capabilities.Skills) {
		t.Fatalf("%+v", got.Capabilities)
	}
	if n, _ := got.Ceilings.MaxModelCalls.Value(); n != 5 {
		t.Fatal("a lower ceiling is kept")
	}
	if n, _ := got.Ceilings.MaxToolCalls.Value(); n != 50 {
		t.Fatal("a higher ceiling is cut to the parent's")
	}
	// Inherited tools of a server the request leaves out go with it; the
	// subagent tool is never inherited.
	got, err = Narrow(p, Scope{Capabilities: Capabilities{MCPServers: []string{"files"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Capabilities.Tools, []string{"fs.read", "fs.list", "fs.write", "mcp/files/list"}) {
		t.Fatalf("%v", got.Capabilities.Tools)
	}
	for name, c := range map[string]struct {
		req  Capabilities
		code Code
	}{
		"a tool the parent lacks":           {Capabilities{Tools: []string{"shell.run"}}, CodeNotInherited},
		"an MCP server the parent lacks":    {Capabilities{MCPServers: []string{"billing"}}, CodeNotInherited},
		"a Skill the parent lacks":          {Capabilities{Skills: []string{"team/deploy"}}, CodeNotInherited},
		"a route entry the parent lacks":    {Capabilities{ModelRoute: []string{"premium"}}, CodeNotInherited},
		"a route out of order":              {Capabilities{ModelRoute: []string{"cheap", "primary"}}, CodeModelRouteOrder},
		"a repeated route entry":            {Capabilities{ModelRoute: []string{"primary", "primary"}}, CodeModelRouteOrder},
		"an empty route":                    {Capabilities{ModelRoute: []string{}}, CodeOutOfRange},
		"a repeated tool":                   {Capabilities{Tools: []string{"fs.read", "fs.read"}}, CodeOutOfRange},
		"the subagent tool":                 {Capabilities{Tools: []string{"subagent"}}, CodeNotInherited},
		"a tool whose server is left out":   {Capabilities{Tools: []string{"mcp/records/get"}, MCPServers: []string{"files"}}, CodeNotInherited},
		"a prefix of a parent's tool":       {Capabilities{Tools: []string{"fs."}}, CodeNotInherited},
		"a case variant of a parent's tool": {Capabilities{Tools: []string{"FS.READ"}}, CodeNotInherited},
	} {
		_, err := Narrow(p, Scope{Capabilities: c.req})
		wantCodeNamed(t, name, err, c.code)
		if c.code != CodeOutOfRange && !errors.Is(err, authority.ErrWiden) {
			t.Errorf("%s: a widening matches authority.ErrWiden", name)
		}
	}
}

// TestToolListKeepsExactlyWhatItNamesUnlessTheRequestNamesServers: a
// tool list with mcp_servers omitted keeps exactly what it names ({"tools":
// []} keeps no tool, not the inherited servers' tools); the server rule
// (a list naming no MCP tool keeps every tool of the servers) applies only
// to servers the request itself names.
func TestToolListKeepsExactlyWhatItNamesUnlessTheRequestNamesServers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		req  Capabilities
		want []string
	}{
		{Capabilities{Tools: []string{}}, []string{}},
		{Capabilities{Tools: []string{"fs.read"}}, []string{"fs.read"}},
		{Capabilities{Tools: []string{"fs.read", "mcp/records/get"}}, []string{"fs.read", "mcp/records/get"}},
		{Capabilities{Tools: []string{}, MCPServers: []string{}}, []string{}},
		{Capabilities{Tools: []string{}, MCPServers: []string{"records"}}, []string{"mcp/records/get", "mcp/records/put"}},
		{Capabilities{Tools: []string{"fs.read"}, MCPServers: []string{"files"}}, []string{"fs.read", "mcp/files/list"}},
		{Capabilities{Tools: []string{"mcp/records/get"}, MCPServers: []string{"records"}}, []string{"mcp/records/get"}},
	} {
		got, err := Narrow(parentScope(), Scope{Capabilities: c.req})
		if err != nil {
			t.Fatalf("%+v: %v", c.req, err)
		}
		if !slices.Equal(got.Capabilities.Tools, c.want) {
			t.Errorf("request %+v: tools %q, want %q", c.req, got.Capabilities.Tools, c.want)
		}
	}
}

func wantCodeNamed(t *testing.T, name string, err error, code Code) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Errorf("%s: want %s, got %v", name, code, err)
	}
}

// TestNarrowPropertyChildIsInsideParent draws random parents and random
// requests and checks, on every dimension, that an accepted child is
// inside its parent (and inside its request), and that a request is
// refused exactly when an independent oracle says it asks for more.
func TestNarrowPropertyChildIsInsideParent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(16, 2026))
	universe := map[string][]string{
		"tools":   {"fs.read", "fs.list", "fs.write", "fs.edit", "shell.run", "skill.read", "subagent", "mcp/a/x", "mcp/a/y", "mcp/b/x", "mcp/c/z"},
		"skills":  {"r/one", "r/two", "s/one", "s/three"},
		"servers": {"a", "b", "c", "d"},
		"route":   {"m1", "m2", "m3", "m4", "m5"},
	}
	pick := func(from []string) []string {
		var out []string
		for _, s := range from {
			if rng.IntN(2) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	request := func(parent, all []string) []string {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1: // a subset of the parent's, shuffled, sometimes repeating
			out := pick(parent)
			if out == nil {
				out = []string{}
			}
			rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			if len(out) > 0 && rng.IntN(8) == 0 {
				out = append(out, out[0])
			}
			return out
		case 2: // anything
			out := pick(all)
			if out == nil {
				out = []string{}
			}
			return out
		}
		return pick(parent) // an ordered subsequence, or nil
	}
	limit := func() ledger.Limit {
		switch rng.IntN(4) {
		case 0:
			return ledger.Limit{}
		case 1:
			return ledger.Unlimited()
		}
		return ledger.Max(uint64(rng.IntN(100)))
	}
	ceilings := func() Ceilings {
		return Ceilings{limit(), limit(), limit(), limit(), limit(), limit(), limit()}
	}
	const cases = 20000
	accepted, omitted := 0, 0
	for i := range cases {
		parent := Scope{Capabilities: Capabilities{Tools: pick(universe["tools"]), Skills: pick(universe["skills"]),
			MCPServers: pick(universe["servers"]), ModelRoute: pick(universe["route"])}, Ceilings: ceilings()}
		pc := parent.Capabilities
		req := Scope{Capabilities: Capabilities{Tools: request(pc.Tools, universe["tools"]), Skills: request(pc.Skills, universe["skills"]),
			MCPServers: request(pc.MCPServers, universe["servers"]), ModelRoute: request(pc.ModelRoute, universe["route"])}, Ceilings: ceilings()}
		got, err := Narrow(parent, req)
		if want := oracleRefuses(parent, req); (err != nil) != want {
			t.Fatalf("case %d: parent %+v request %+v: err %v, the oracle says refuse=%v", i, parent.Capabilities, req.Capabilities, err, want)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("case %d: untyped error %v", i, err)
			}
			continue
		}
		accepted++
		gc, rc := got.Capabilities, req.Capabilities
		for dim, lists := range map[string][3][]string{
			"tools":       {gc.Tools, pc.Tools, nil},
			"skills":      {gc.Skills, pc.Skills, rc.Skills},
			"mcp_servers": {gc.MCPServers, pc.MCPServers, rc.MCPServers},
		} {
			for _, name := range lists[0] {
				if !slices.Contains(lists[1], name) {
					t.Fatalf("case %d: %s %q is not the parent's", i, dim, name)
				}
				if lists[2] != nil && !slices.Contains(lists[2], name) {
					t.Fatalf("case %d: %s %q was not requested", i, dim, name)
				}
			}
		}
		if want := oracleTools(parent, req); !sameSet(gc.Tools, want) {
			t.Fatalf("case %d: parent %+v request %+v: tools %v, the oracle says %v", i, pc, rc, gc.Tools, want)
		}
		if rc.Tools != nil && rc.MCPServers == nil {
			// mcp_servers omitted: the tool list keeps exactly what it
			// names, whatever servers the child inherits.
			omitted++
			if !sameSet(gc.Tools, rc.Tools) {
				t.Fatalf("case %d: tools %v with mcp_servers omitted, requested %v", i, gc.Tools, rc.Tools)
			}
		}
		if slices.Contains(gc.Tools, ToolID) {
			t.Fatalf("case %d: a child got the subagent tool", i)
		}
		for _, tool := range gc.Tools {
			if srv, ok := mcpServer(tool); ok && !slices.Contains(gc.MCPServers, srv) {
				t.Fatalf("case %d: tool %s without its server", i, tool)
			}
		}
		if !isSubsequence(gc.ModelRoute, pc.ModelRoute) || (rc.ModelRoute != nil && !slices.Equal(gc.ModelRoute, rc.ModelRoute)) {
			t.Fatalf("case %d: route %v of parent %v", i, gc.ModelRoute, pc.ModelRoute)
		}
		g, p, r := got.Ceilings.fields(), parent.Ceilings.fields(), req.Ceilings.fields()
		for k := range g {
			if !g[k].limit.AtMost(*p[k].limit) || (r[k].limit.IsSet() && !g[k].limit.AtMost(*r[k].limit)) {
				t.Fatalf("case %d: %s = %s, parent %s, request %s", i, g[k].name, g[k].limit, p[k].limit, r[k].limit)
			}
			if p[k].limit.IsSet() && !g[k].limit.IsSet() {
				t.Fatalf("case %d: %s lost the parent's ceiling", i, g[k].name)
			}
		}
	}
	if accepted < cases/10 || accepted == cases {
		t.Fatalf("the draw must both accept and refuse often: %d of %d accepted", accepted, cases)
	}
	if omitted < cases/50 {
		t.Fatalf("only %d accepted draws had a tool list with mcp_servers omitted", omitted)
	}
}

// oracleTools says, independently of Narrow, which tools an accepted
// request keeps: the parent's (less subagent and the MCP tools of servers
// the child lacks) when it has no tool list; else exactly the list, and,
// when the request itself names mcp_servers and its list names no MCP
// tool, every tool the parent has of those servers.
func oracleTools(parent, req Scope) []string {
	p, r := parent.Capabilities, req.Capabilities
	servers := p.MCPServers
	if r.MCPServers != nil {
		servers = r.MCPServers
	}
	ofServers := func(tool string) bool {
		srv, ok := strings.CutPrefix(tool, "mcp/")
		if !ok {
			return false
		}
		srv, _, _ = strings.Cut(srv, "/")
		return slices.Contains(servers, srv)
	}
	var out []string
	if r.Tools == nil {
		for _, tool := range p.Tools {
			if tool != "subagent" && (!strings.HasPrefix(tool, "mcp/") || ofServers(tool)) {
				out = append(out, tool)
			}
		}
		return out
	}
	out = append(out, r.Tools...)
	if r.MCPServers != nil && !slices.ContainsFunc(r.Tools, func(tool string) bool { return strings.HasPrefix(tool, "mcp/") }) {
		for _, tool := range p.Tools {
			if ofServers(tool) {
				out = append(out, tool)
			}
		}
	}
	return out
}

// sameSet reports whether got holds the names of want, each once.
func sameSet(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, slices.Compact(want))
}

// oracleRefuses says, independently of Narrow, whether a request asks for
// anything its parent lacks.
func oracleRefuses(parent, req Scope) bool {
	p, r := parent.Capabilities, req.Capabilities
	for _, l := range [][2][]string{{r.Tools, p.Tools}, {r.Skills, p.Skills}, {r.MCPServers, p.MCPServers}} {
		seen := map[string]bool{}
		for _, name := range l[0] {
			if seen[name] || !slices.Contains(l[1], name) {
				return true
			}
			seen[name] = true
		}
	}
	if slices.Contains(r.Tools, ToolID) {
		return true
	}
	if r.ModelRoute != nil && (len(r.ModelRoute) == 0 || !isSubsequence(r.ModelRoute, p.ModelRoute)) {
		return true
	}
	servers := p.MCPServers
	if r.MCPServers != nil {
		servers = r.MCPServers
	}
	if r.Tools != nil {
		for _, tool := range r.Tools {
			if srv, ok := mcpServer(tool); ok && !slices.Contains(servers, srv) {
				return true
			}
		}
	}
	return false
}

// isSubsequence reports whether sub is an ordered subsequence of seq with
// no entry used twice.
func isSubsequence(sub, seq []string) bool {
	j := 0
	for _, s := range sub {
		for j < len(seq) && seq[j] != s {
			j++
		}
		if j == len(seq) {
			return false
		}
		j++
	}
	return true
}
