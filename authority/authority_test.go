package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/redact"
)

func mustSet(t testing.TB, cfg Config) *Set {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestZeroValuesDeny(t *testing.T) {
	var s Set
	if d := s.Decide(Request{Capability: FSRead}); d.Allowed {
		t.Fatal("the zero Set admitted fs.read")
	}
	var r Rules
	if v := r.Evaluate(DimTools, "fs.read"); v.Allowed || v.RuleID != "builtin.tools.default_deny" {
		t.Fatalf("zero Rules: %+v", v)
	}
	var nilRules *Rules
	if v := nilRules.Evaluate(DimTools, "fs.read"); !v.Allowed {
		t.Fatal("an omitted dimension must add no constraint")
	}
}

func TestRuleEvaluation(t *testing.T) {
	r := &Rules{Default: Allow,
		Allow: []Rule{{ID: "a.read", Value: "fs.read"}, {ID: "a.list", Value: "fs.list"}},
		Deny:  []Rule{{ID: "d.read", Value: "fs.read"}}}
	cases := []struct {
		value string
		ok    bool
		rule  string
	}{
		{"fs.read", false, "d.read"},                         // deny wins over allow
		{"fs.list", true, "a.list"},                          // allow list match
		{"fs.search", false, "builtin.tools.allowlist_miss"}, // non-empty allow list must match, whatever the default
		{"fs.*", false, "builtin.tools.allowlist_miss"},
	}
	for _, c := range cases {
		v := r.Evaluate(DimTools, c.value)
		if v.Allowed != c.ok || v.RuleID != c.rule {
			t.Errorf("%s: got %+v, want %v/%s", c.value, v, c.ok, c.rule)
		}
	}
}

func TestNoWildcards(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead}, Layers: []Layer{{ID: "p", Kind: KindPolicy,
		Dimensions: map[Dimension]*Rules{DimTools: {Default: Deny, Allow: []Rule{{ID: "all.fs", Value: "fs.*"}}}}}}})
	if d := s.Decide(Request{Capability: FSRead}); d.Allowed {
		t.Fatal("fs.* matched fs.read")
	}
}

func TestRootsMatchByComponent(t *testing.T) {
	for _, c := range []struct {
		root, p string
		ok      bool
	}{{"docs", "docs", true}, {"docs", "docs/a.md", true}, {"docs", "docs2/a.md", false}, {"docs", "doc", false}, {".", "x/y", true}, {"a/b", "a/b/c", true}, {"a/b", "a/bc", false}} {
		if got := WithinRoot(c.root, c.p); got != c.ok {
			t.Errorf("WithinRoot(%q, %q) = %v", c.root, c.p, got)
		}
	}
}

func TestEveryLayerMustAllow(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead, FSList}, Layers: []Layer{
		{ID: "ceiling", Kind: KindAuthority, ToolNames: []ID{FSRead}},
		{ID: "policy", Kind: KindPolicy, Dimensions: map[Dimension]*Rules{DimTools: AllowAll()}},
	}})
	d := s.Decide(Request{Capability: FSList})
	if d.Allowed || d.Layer != "ceiling" || d.RuleID != "builtin.tool_names.allowlist_miss" {
		t.Fatalf("got %+v", d)
	}
	if d := s.Decide(Request{Capability: FSRead}); !d.Allowed {
		t.Fatalf("fs.read: %+v", d)
	}
}

func TestAllowRuleCannotCreateServer(t *testing.T) {
	s := mustSet(t, Config{MCPServers: map[string]MCPServer{"evidence": {}}, Layers: []Layer{{ID: "p", Kind: KindPolicy,
		Dimensions: map[Dimension]*Rules{
			DimMCPServers: {Default: Deny, Allow: []Rule{{ID: "ghost.server", Value: "ghost"}}},
			DimMCPTools:   {Default: Deny, Allow: []Rule{{ID: "ghost.tool", Value: "mcp/ghost/read"}}},
		}}}})
	d := s.Decide(Request{Capability: "mcp/ghost/read"})
	if d.Allowed || d.RuleID != RuleUnconfiguredServer || d.Layer != LayerConfiguration {
		t.Fatalf("got %+v", d)
	}
}

func TestMCPAdmissionOrder(t *testing.T) {
	s := mustSet(t, Config{MCPServers: map[string]MCPServer{"records": {Launcher: "/opt/records"}}, Layers: []Layer{{ID: "p", Kind: KindPolicy,
		Dimensions: map[Dimension]*Rules{
			DimMCPServers:   AllowAll(),
			DimMCPLaunchers: {Default: Deny},
			DimMCPTools:     {Default: Deny},
		}}}})
	d := s.Decide(Request{Capability: "mcp/records/lookup"})
	if d.Allowed || d.RuleID != "builtin.mcp.launchers.default_deny" {
		t.Fatalf("the launcher is checked before the tool: %+v", d)
	}
}

func TestHostResourceKindsFailClosed(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead}})
	d := s.Decide(Request{Capability: FSRead, Resources: []Resource{{Kind: "note", Value: "N-1"}}})
	if d.Allowed {
		t.Fatal("an unscoped resource kind was admitted")
	}
}

// The seed's narrow read contract: only read_note with one string note_id in
// a trusted authorized set.
func TestSeedReadNoteContract(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead}, Layers: []Layer{{ID: "case", Kind: KindAuthority, Dimensions: map[Dimension]*Rules{
		"note": {Default: Deny, Allow: []Rule{{ID: "case.n1", Value: "N-1"}}},
	}}}})
	spec := ToolSpec{ID: FSRead, InputSchema: json.RawMessage(`{"type":"object","properties":{"note_id":{"type":"string"}},"required":["note_id"],"additionalProperties":false}`),
		Resources: func(a map[string]any) []Resource { return []Resource{{Kind: "note", Value: a["note_id"].(string)}} }}
	c, err := NewContracts(s, []ToolSpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	check := func(tool ID, args string) error {
		return c.Check(Call{Tool: tool, Arguments: json.RawMessage(args)})
	}
	if err := check(FSRead, `{"note_id":"N-1"}`); err != nil {
		t.Fatalf("allowed read: %v", err)
	}
	for _, tc := range []struct {
		tool ID
		args string
		want error
	}{
		{"fs.delete", `{"note_id":"N-1"}`, ErrUnknownTool},
		{FSRead, `{"note_id":"N-2"}`, ErrUnauthorizedResource},
		{FSRead, `{"note_id":[]}`, ErrWrongType},
		{FSRead, `{"note_id":"N-1","approved":true}`, ErrExtraField},
	} {
		err := check(tc.tool, tc.args)
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrContract) {
			t.Errorf("%s %s: got %v, want %v", tc.tool, tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "N-2") {
			t.Errorf("the error echoes an argument value: %v", err)
		}
	}
}

func TestNarrowOnlyRemoves(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead, FSList, FSWrite}, MCPServers: map[string]MCPServer{"records": {}},
		Layers: []Layer{{ID: "p", Kind: KindPolicy, Dimensions: map[Dimension]*Rules{DimTools: {Default: Allow, Deny: []Rule{{ID: "no.write", Value: "fs.write"}}}}}}})
	if _, err := s.Narrow(Narrowing{ID: "child", Tools: []ID{FSRead, FSWrite}}); !errors.Is(err, ErrWiden) {
		t.Fatalf("a child asked for a denied tool: %v", err)
	}
	if _, err := s.Narrow(Narrowing{ID: "child", Tools: []ID{ShellRun}}); !errors.Is(err, ErrWiden) {
		t.Fatalf("a child asked for an unconfigured tool: %v", err)
	}
	if _, err := s.Narrow(Narrowing{ID: "child", MCPServers: []string{"ghost"}}); !errors.Is(err, ErrWiden) {
		t.Fatalf("a child asked for an unconfigured server: %v", err)
	}
	child, err := s.Narrow(Narrowing{ID: "child", Tools: []ID{FSRead}})
	if err != nil {
		t.Fatal(err)
	}
	if d := child.Decide(Request{Capability: FSList}); d.Allowed {
		t.Fatal("narrowing kept fs.list")
	}
	if d := child.Decide(Request{Capability: FSRead}); !d.Allowed {
		t.Fatalf("narrowing lost fs.read: %+v", d)
	}
}

// TestNarrowedToolListKeepsExactlyWhatItNames: a non-nil tool list keeps
// exactly the tools it names. Keeping a server keeps none of its tools the
// list does not name, whether the narrowing names the servers or passes on
// every one the parent has (a spawn that omits mcp_servers): an MCP tool
// outside the list is denied, by the child's own layer.
func TestNarrowedToolListKeepsExactlyWhatItNames(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead, FSList}, MCPServers: map[string]MCPServer{"records": {}, "tickets": {}},
		Layers: []Layer{{ID: "policy", Kind: KindPolicy, Dimensions: map[Dimension]*Rules{DimMCPTools: AllowAll()}}}})
	for _, tc := range []struct {
		name    string
		n       Narrowing
		allowed []ID // of fs.read, fs.list, mcp/records/lookup, mcp/records/update, mcp/tickets/open
	}{
		{"no tools, servers omitted", Narrowing{Tools: []ID{}}, nil},
		{"no tools, every server passed on", Narrowing{Tools: []ID{}, MCPServers: []string{"records", "tickets"}}, nil},
		{"fs.read, servers omitted", Narrowing{Tools: []ID{FSRead}}, []ID{FSRead}},
		{"fs.read, every server passed on", Narrowing{Tools: []ID{FSRead}, MCPServers: []string{"records", "tickets"}}, []ID{FSRead}},
		{"fs.read, one server kept", Narrowing{Tools: []ID{FSRead}, MCPServers: []string{"records"}}, []ID{FSRead}},
		{"one MCP tool named", Narrowing{Tools: []ID{"mcp/records/lookup"}, MCPServers: []string{"records", "tickets"}}, []ID{"mcp/records/lookup"}},
		{"no tool list, one server kept", Narrowing{MCPServers: []string{"records"}}, []ID{FSRead, FSList, "mcp/records/lookup", "mcp/records/update"}},
	} {
		tc.n.ID = "child"
		child, err := s.NarrowSet(tc.n)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, id := range []ID{FSRead, FSList, "mcp/records/lookup", "mcp/records/update", "mcp/tickets/open"} {
			if !s.Decide(Request{Capability: id}).Allowed {
				t.Fatalf("the parent denies %s", id)
			}
			d := child.Decide(Request{Capability: id})
			if want := slices.Contains(tc.allowed, id); d.Allowed != want {
				t.Errorf("%s: %s allowed=%v, want %v (%+v)", tc.name, id, d.Allowed, want, d)
				continue
			}
			if srv, _, mcp := id.MCP(); !d.Allowed && mcp && slices.Contains(child.MCPServers(), srv) && d.Layer != "child" {
				t.Errorf("%s: %s is denied by layer %q rule %q, want the child's layer", tc.name, id, d.Layer, d.RuleID)
			}
		}
	}
}

// randomRequest draws a request from a small universe so that hits are
// frequent.
func randomRequest(r *rand.Rand) Request {
	caps := []ID{FSRead, FSList, FSWrite, ShellRun, "mcp/records/a", "mcp/records/b", "mcp/ghost/a", "team/review", "bad id"}
	req := Request{Capability: caps[r.Intn(len(caps))]}
	roots := []string{"docs", "docs/a", "src", ".", "docs2"}
	for i := r.Intn(3); i > 0; i-- {
		kinds := []ResourceKind{ResourceRead, ResourceWrite}
		req.Resources = append(req.Resources, Resource{Kind: kinds[r.Intn(2)], Value: roots[r.Intn(len(roots))]})
	}
	return req
}

func randomNarrowing(r *rand.Rand) Narrowing {
	n := Narrowing{ID: "child"}
	pick := func(all []string) []string {
		if r.Intn(3) == 0 {
			return nil
		}
		var out []string
		for _, a := range all {
			if r.Intn(2) == 0 {
				out = append(out, a)
			}
		}
		return append([]string{}, out...)
	}
	for _, t := range pick([]string{"fs.read", "fs.list", "fs.write", "shell.run", "mcp/records/a"}) {
		n.Tools = append(n.Tools, ID(t))
	}
	if n.Tools == nil && r.Intn(2) == 0 {
		n.Tools = []ID{}
	}
	n.MCPServers = pick([]string{"records"})
	n.ReadRoots = pick([]string{"docs", "src", "."})
	n.WriteRoots = pick([]string{"docs"})
	return n
}

func propertySet(t testing.TB) *Set {
	return mustSet(t, Config{
		Native:     []ID{FSRead, FSList, FSWrite, ShellRun},
		MCPServers: map[string]MCPServer{"records": {}},
		Skills:     []ID{"team/review"},
		Layers: []Layer{
			{ID: "ceiling", Kind: KindAuthority, Dimensions: map[Dimension]*Rules{DimWriteRoots: {Default: Deny, Allow: []Rule{{ID: "w.docs", Value: "docs"}}}}},
			{ID: "policy", Kind: KindPolicy, Dimensions: map[Dimension]*Rules{DimMCPTools: {Default: Allow, Deny: []Rule{{ID: "no.b", Value: "mcp/records/b"}}}}},
		},
	})
}

// TestNarrowPropertyNeverWidens: for random narrowings and requests, a
// narrowed authority admits a request only if its parent does, and a
// narrowing with a tool list admits no tool the list does not name,
// whether it names its MCP servers, keeps none or omits them.
func TestNarrowPropertyNeverWidens(t *testing.T) {
	s := propertySet(t)
	r := rand.New(rand.NewSource(1))
	kept := 0
	for i := 0; i < 20000; i++ {
		n := randomNarrowing(r)
		child, err := s.Narrow(n)
		if err != nil {
			continue
		}
		req := randomRequest(r)
		if child.Decide(req).Allowed && !s.Decide(req).Allowed {
			t.Fatalf("narrowing %+v widened %+v", n, req)
		}
		if err := keepsOnlyNamedTools(n, child, req); err != nil {
			t.Fatal(err)
		}
		if n.Tools != nil && req.Capability.Kind() == KindMCPTool && s.Decide(req).Allowed {
			kept++
		}
	}
	if kept < 100 {
		t.Fatalf("only %d draws decided an MCP tool the parent admits under a tool list", kept)
	}
}

// keepsOnlyNamedTools checks that child, narrowed by n, admits req's tool
// only when n has no tool list or its list names the tool.
func keepsOnlyNamedTools(n Narrowing, child Authority, req Request) error {
	switch req.Capability.Kind() {
	case KindNative, KindHost, KindMCPTool:
	default:
		return nil
	}
	if n.Tools != nil && !slices.Contains(n.Tools, req.Capability) && child.Decide(req).Allowed {
		return fmt.Errorf("narrowing %+v admits %s, which its tool list does not name", n, req.Capability)
	}
	return nil
}

func FuzzNarrow(f *testing.F) {
	f.Add(int64(1), int64(2))
	f.Add(int64(7), int64(99))
	s := propertySet(f)
	f.Fuzz(func(t *testing.T, a, b int64) {
		n := randomNarrowing(rand.New(rand.NewSource(a)))
		child, err := s.Narrow(n)
		if err != nil {
			return
		}
		req := randomRequest(rand.New(rand.NewSource(b)))
		if child.Decide(req).Allowed && !s.Decide(req).Allowed {
			t.Fatalf("narrowing %+v widened %+v", n, req)
		}
		if err := keepsOnlyNamedTools(n, child, req); err != nil {
			t.Fatal(err)
		}
		// Narrowing twice is narrower still.
		grand, err := child.Narrow(Narrowing{ID: "grand", Tools: n.Tools})
		if err == nil && grand.Decide(req).Allowed && !child.Decide(req).Allowed {
			t.Fatal("a second narrowing widened")
		}
	})
}

func FuzzContract(f *testing.F) {
	f.Add("fs.read", []byte(`{"note_id":"N-1"}`))
	f.Add("fs.read", []byte(`{"note_id":null}`))
	f.Add("x", []byte(`[]`))
	s := mustSet(f, Config{Native: []ID{FSRead}, Layers: []Layer{{ID: "case", Kind: KindAuthority, Dimensions: map[Dimension]*Rules{
		"note": {Default: Deny, Allow: []Rule{{ID: "case.n1", Value: "N-1"}}},
	}}}})
	c, err := NewContracts(s, []ToolSpec{{ID: FSRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"note_id":{"type":"string","maxLength":64}},"required":["note_id"],"additionalProperties":false}`),
		Resources:   func(a map[string]any) []Resource { return []Resource{{Kind: "note", Value: a["note_id"].(string)}} }}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tool string, args []byte) {
		err := c.Check(Call{Tool: ID(tool), Arguments: args})
		if err == nil {
			var decoded map[string]any
			if json.Unmarshal(args, &decoded) != nil || tool != "fs.read" || decoded["note_id"] != "N-1" || len(decoded) != 1 {
				t.Fatalf("accepted %q %q", tool, args)
			}
			return
		}
		var ce *ContractError
		if !errors.As(err, &ce) {
			t.Fatalf("untyped rejection %T", err)
		}
	})
}

func TestCredentialResolvesOnlyForConsumerAndDestination(t *testing.T) {
	var rs redact.Set
	r := NewResolver(ResolverOptions{
		Credentials: []Credential{{Name: "evidence", Consumer: ConsumerMCPHeaders, Destinations: []string{"mcp:evidence:header:x-token"},
			Sources: []Source{{Kind: SourceEnvironment, Name: "MISSING"}, {Kind: SourceEnvironment, Name: "EVIDENCE_TOKEN"}}}},
		LookupEnv: func(n string) (string, bool) {
			if n == "EVIDENCE_TOKEN" {
				return "sk-very-secret-value", true
			}
			return "", false
		},
		Redact: &rs,
	})
	ctx := context.Background()
	v, err := r.Resolve(ctx, "evidence", ConsumerMCPHeaders, "mcp:evidence:header:x-token")
	if err != nil || v.Reveal() != "sk-very-secret-value" {
		t.Fatalf("resolve: %v", err)
	}
	for _, bad := range []struct {
		consumer Consumer
		dest     string
	}{{ConsumerA2ABearer, "mcp:evidence:header:x-token"}, {ConsumerMCPHeaders, "mcp:other:header:x-token"}, {ConsumerOpenRouter, "https://openrouter.ai/api/v1/chat/completions"}} {
		_, err := r.Resolve(ctx, "evidence", bad.consumer, bad.dest)
		if !errors.Is(err, ErrCredential) {
			t.Errorf("%s at %s resolved", bad.consumer, bad.dest)
		}
		if err != nil && strings.Contains(err.Error(), "sk-very") {
			t.Errorf("the value leaked into an error")
		}
	}
	for _, out := range []string{fmt.Sprint(v), fmt.Sprintf("%v %+v %#v %s %q", v, v, v, v, v)} {
		if strings.Contains(out, "sk-very") {
			t.Fatalf("formatting leaked the value: %s", out)
		}
	}
	b, _ := json.Marshal(struct{ Token Secret }{v})
	if strings.Contains(string(b), "sk-very") {
		t.Fatalf("JSON leaked the value: %s", b)
	}
	if got := rs.String("echo sk-very-secret-value"); got != "echo [redacted]" {
		t.Fatalf("the redactor did not learn the value: %s", got)
	}
}

func TestOnlyAnAbsentSourceFallsThrough(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	r := NewResolver(ResolverOptions{Credentials: []Credential{{Name: "k", Consumer: ConsumerA2ABearer, Destinations: []string{"d"},
		Sources: []Source{{Kind: SourceFile, Path: empty, Encoding: "utf8"}, {Kind: SourceEnvironment, Name: "K"}}}},
		LookupEnv: func(string) (string, bool) { return "fallback", true }})
	if _, err := r.Resolve(context.Background(), "k", ConsumerA2ABearer, "d"); err == nil {
		t.Fatal("a present but empty file fell through")
	}
	r2 := NewResolver(ResolverOptions{Credentials: []Credential{{Name: "k", Consumer: ConsumerA2ABearer, Destinations: []string{"d"},
		Sources: []Source{{Kind: SourceFile, Path: filepath.Join(dir, "absent"), Encoding: "utf8"}, {Kind: SourceEnvironment, Name: "K"}}}},
		LookupEnv: func(string) (string, bool) { return "fallback", true }})
	if v, err := r2.Resolve(context.Background(), "k", ConsumerA2ABearer, "d"); err != nil || v.Reveal() != "fallback" {
		t.Fatalf("an absent file did not fall through: %v", err)
	}
}

func TestDotenv(t *testing.T) {
	for _, c := range []struct {
		doc, key, want string
		present, ok    bool
	}{
		{"A=1\nB='two words'\n# c\n", "B", "two words", true, true},
		{"export A=\"x\"\n", "A", "x", true, true},
		{"A=1\n", "B", "", false, true},
		{"A=1\nA=2\n", "A", "", false, false},
		{"A=$(id)\n", "A", "", false, false},
		{"not a line\n", "A", "", false, false},
	} {
		v, present, err := ParseDotenvKey([]byte(c.doc), c.key)
		if (err == nil) != c.ok || v != c.want || present != c.present {
			t.Errorf("%q: got %q %v %v", c.doc, v, present, err)
		}
	}
}

func ExampleSet_Decide() {
	s, _ := New(Config{
		Native: []ID{FSRead, FSWrite},
		Layers: []Layer{{ID: "read-only", Kind: KindAuthority, Dimensions: map[Dimension]*Rules{
			DimWriteRoots: {Default: Deny},
		}}},
	})
	d := s.Decide(Request{Capability: FSWrite, Resources: []Resource{{Kind: ResourceWrite, Value: "notes.md"}}})
	fmt.Println(d.Allowed, d.Layer, d.RuleID)
	// Output: false read-only builtin.write_roots.default_deny
}

// A deny on a launcher covers every path to the same file: a symlink and a
// hard link are the launcher itself, in mcp.launchers and executables alike.
func TestLauncherRulesMatchTheCanonicalFile(t *testing.T) {
	dir := t.TempDir()
	launcher := filepath.Join(dir, "records")
	if err := os.WriteFile(launcher, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink, hardlink, other := filepath.Join(dir, "via-symlink"), filepath.Join(dir, "via-hardlink"), filepath.Join(dir, "other")
	if err := os.Symlink(launcher, symlink); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(launcher, hardlink); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dim := range []Dimension{DimMCPLaunchers, DimExecutables} {
		for _, tc := range []struct {
			path    string
			allowed bool
		}{{launcher, false}, {symlink, false}, {hardlink, false}, {other, true}, {filepath.Join(dir, "missing"), true}} {
			s := mustSet(t, Config{MCPServers: map[string]MCPServer{"records": {Launcher: tc.path}}, Layers: []Layer{{ID: "ops", Kind: KindAuthority,
				Dimensions: map[Dimension]*Rules{dim: {Default: Allow, Deny: []Rule{{ID: "ops.no_records", Value: launcher}}}}}}})
			d := s.Decide(Request{Capability: "mcp/records/lookup"})
			if d.Allowed != tc.allowed || !tc.allowed && d.RuleID != "ops.no_records" {
				t.Errorf("%s %s: %+v", dim, filepath.Base(tc.path), d)
			}
		}
		// The rule may name the link and the server the file.
		s := mustSet(t, Config{MCPServers: map[string]MCPServer{"records": {Launcher: launcher}}, Layers: []Layer{{ID: "ops", Kind: KindAuthority,
			Dimensions: map[Dimension]*Rules{dim: {Default: Allow, Deny: []Rule{{ID: "ops.no_records", Value: symlink}}}}}}})
		if d := s.Decide(Request{Capability: "mcp/records/lookup"}); d.Allowed {
			t.Errorf("%s: a deny naming a symlink missed its target: %+v", dim, d)
		}
	}
}

// TestAnAllowedCallsContractCheckAllocatesNothing: every tool call of a
// task passes its contract; an allowed call whose arguments hold no string
// to copy costs no allocation, and a denial still carries its decision.
func TestAnAllowedCallsContractCheckAllocatesNothing(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead}})
	c, err := NewContracts(s, []ToolSpec{{ID: FSRead, InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`)}})
	if err != nil {
		t.Fatal(err)
	}
	call := Call{Tool: FSRead, Arguments: json.RawMessage(`{"n":1}`)}
	if d, err := c.Decide(call); err != nil || !d.Allowed {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.Decide(call) }); n != 0 && !raceEnabled {
		t.Errorf("an allowed call's contract check allocates %v times, want 0", n)
	}
	denied, err := NewContracts(mustSet(t, Config{}), []ToolSpec{{ID: FSRead, InputSchema: json.RawMessage(`{"type":"object"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	var ce *ContractError
	if _, err := denied.Decide(call); !errors.As(err, &ce) || ce.Decision == nil || ce.Decision.Allowed {
		t.Fatalf("a denial without its decision: %v", err)
	}
}

// TestMissingCredentialNamesWhereItLooked: a credential none of whose
// sources is present says which credential, and each environment
// variable, file and host source it looked for, in order.
func TestMissingCredentialNamesWhereItLooked(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.env") // never written
	r := NewResolver(ResolverOptions{Credentials: []Credential{{Name: "openai", Consumer: ConsumerOpenAICompatible,
		Sources:      []Source{{Kind: SourceEnvironment, Name: "OPENAI_API_KEY"}, {Kind: SourceFile, Path: keys, Encoding: "dotenv", Key: "OPENAI"}},
		Destinations: []string{"https://llm.example.test/v1/chat/completions"}}}})
	_, err := r.Resolve(context.Background(), "openai", ConsumerOpenAICompatible, "https://llm.example.test/v1/chat/completions")
	if err == nil {
		t.Fatal("resolved a credential with no source present")
	}
	for _, w := range []string{`"openai"`, "environment variable OPENAI_API_KEY", "file " + keys + " (key OPENAI)"} {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("the error does not say %q: %v", w, err)
		}
	}
}

// TestMissingCredentialSaysHowToSetIt: the message ends with what a person
// does to make the credential present, through its first environment
// variable, or its file (and dotenv key) when a file is the first source.
func TestMissingCredentialSaysHowToSetIt(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.env") // never written
	dest := "https://llm.example.test/v1/chat/completions"
	for _, c := range []struct {
		name    string
		sources []Source
		want    string
	}{
		{"environment", []Source{{Kind: SourceEnvironment, Name: "OPENAI_API_KEY"}, {Kind: SourceFile, Path: keys}}, "set it with: export OPENAI_API_KEY=<value>"},
		{"file", []Source{{Kind: SourceFile, Path: keys}}, "set it by writing the value to " + keys},
		{"dotenv", []Source{{Kind: SourceFile, Path: keys, Encoding: "dotenv", Key: "OPENAI"}}, "set it with a line OPENAI=<value> in " + keys},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewResolver(ResolverOptions{Credentials: []Credential{{Name: "openai", Consumer: ConsumerOpenAICompatible, Sources: c.sources, Destinations: []string{dest}}}})
			_, err := r.Resolve(context.Background(), "openai", ConsumerOpenAICompatible, dest)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), string(ConsumerOpenAICompatible)) {
				t.Fatalf("the error does not name its consumer and say %q: %v", c.want, err)
			}
		})
	}
}

// TestCompiledSchemasCompileATextOnce: contracts built again through one
// CompiledSchemas over the same schema text share its compiled schema, the
// contracts they are extended into compile through it too, a text that
// fails is an error each time, and the cache stays within its bound.
func TestCompiledSchemasCompileATextOnce(t *testing.T) {
	s := mustSet(t, Config{Native: []ID{FSRead, FSWrite}})
	text := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`)
	var cs CompiledSchemas
	a, err := cs.NewContracts(s, []ToolSpec{{ID: FSRead, InputSchema: text}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cs.NewContracts(s, []ToolSpec{{ID: FSRead, InputSchema: append(json.RawMessage(nil), text...)}})
	if err != nil {
		t.Fatal(err)
	}
	if a.specs[FSRead].schema != b.specs[FSRead].schema {
		t.Error("the same schema text was compiled twice")
	}
	w, err := b.With([]ToolSpec{{ID: FSWrite, InputSchema: text}})
	if err != nil {
		t.Fatal(err)
	}
	if w.specs[FSWrite].schema != a.specs[FSRead].schema {
		t.Error("With compiled a schema text the cache held")
	}
	if d, err := w.Decide(Call{Tool: FSWrite, Arguments: json.RawMessage(`{"n":"x"}`)}); err == nil || d.Allowed {
		t.Errorf("a shared schema admitted a wrong type: %+v, %v", d, err)
	}
	for range 2 {
		if _, err := cs.NewContracts(s, []ToolSpec{{ID: FSRead, InputSchema: json.RawMessage(`{"type":"object","pattern":1}`)}}); err == nil {
			t.Error("a schema outside the subset compiled")
		}
	}
	for i := range maxCompiledSchemas + 10 {
		raw := json.RawMessage(fmt.Sprintf(`{"type":"object","maxProperties":%d}`, i))
		if _, err := cs.NewContracts(s, []ToolSpec{{ID: FSRead, InputSchema: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(cs.m); n > maxCompiledSchemas {
		t.Errorf("the cache holds %d schemas, over its bound", n)
	}
}
