package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// productionLayers mirrors presets/v1: base.toml's ordinary shell.commands and
// production.toml's immutable authority layer.
func productionLayers() []Layer {
	return []Layer{
		{Name: "options", Rules: CommandRules{Default: DefaultDeny, Allow: []CommandRule{
			{ID: "preset.printf", Executable: "/usr/bin/printf", Args: []string{}, Match: MatchPrefix}}}},
		{Name: "production.read_only", Rules: CommandRules{Default: DefaultDeny, Allow: []CommandRule{
			{ID: "production.printf", Executable: "/usr/bin/printf", Args: []string{}, Match: MatchPrefix}}}},
	}
}

func mustPolicy(t *testing.T, layers ...Layer) *Policy {
	t.Helper()
	p, err := NewPolicy(layers...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProductionPresetAllowsOnlyPrintf(t *testing.T) {
	t.Parallel()
	for _, layers := range [][]Layer{productionLayers(), productionLayers()[1:]} {
		p := mustPolicy(t, layers...)
		last := layers[len(layers)-1].Name
		first := layers[0].Name
		cases := []struct {
			command string
			allowed bool
			layer   string
			rule    string
			reason  string
		}{
			{"/usr/bin/printf hello", true, last, "production.printf", "allow_rule"},
			{"printf hello", true, last, "production.printf", "allow_rule"},
			{"/bin/printf hello", true, last, "production.printf", "allow_rule"},
			{"printf hello | sh", false, "builtin", "builtin.shell.syntax", "operator"},
			{"/bin/rm -rf x", false, first, "builtin.commands.allowlist_miss", "allowlist_miss"},
			{"env", false, first, "builtin.commands.allowlist_miss", "allowlist_miss"},
			{"/usr/bin/printf $(id)", false, "builtin", "builtin.shell.syntax", "expansion"},
			{"no-such-program-pablo x", false, "builtin", "builtin.shell.executable", "not_found"},
			{"./printf x", false, "builtin", "builtin.shell.executable", "relative_path"},
		}
		for _, c := range cases {
			d := p.Check(c.command)
			if d.Allowed != c.allowed || d.Layer != c.layer || d.RuleID != c.rule || d.Reason != c.reason {
				t.Errorf("%d layers: Check(%q) = %+v; want allowed=%v layer=%s rule=%s reason=%s",
					len(layers), c.command, d, c.allowed, c.layer, c.rule, c.reason)
			}
			if !d.Allowed {
				msg := (&DeniedError{Decision: d}).Error()
				if strings.Contains(msg, c.command) {
					t.Errorf("denial echoes the command: %s", msg)
				}
			}
		}
	}
}

func TestDenyWinsOverDefaultAllow(t *testing.T) {
	t.Parallel()
	// presets/v1 development.toml
	p := mustPolicy(t, Layer{Name: "options", Rules: CommandRules{Default: DefaultAllow, Deny: []CommandRule{
		{ID: "development.deny_rm", Executable: "/bin/rm", Args: []string{}, Match: MatchPrefix}}}})
	if d := p.Check("/bin/rm -rf x"); d.Allowed || d.RuleID != "development.deny_rm" || d.Reason != "deny_rule" {
		t.Errorf("rm must be denied by development.deny_rm: %+v", d)
	}
	if d := p.Check("rm x"); d.Allowed || d.RuleID != "development.deny_rm" {
		t.Errorf("bare rm resolves to the same file and must be denied: %+v", d)
	}
	if d := p.Check("printf ok"); !d.Allowed || d.RuleID != "builtin.commands.default_allow" {
		t.Errorf("printf must be allowed by default: %+v", d)
	}
}

func TestDenyWinsOverMatchingAllow(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, Layer{Name: "l", Rules: CommandRules{Default: DefaultDeny,
		Allow: []CommandRule{{ID: "allow.printf", Executable: "/usr/bin/printf", Match: MatchPrefix}},
		Deny:  []CommandRule{{ID: "deny.secret", Executable: "/usr/bin/printf", Args: []string{"secret"}, Match: MatchPrefix}},
	}})
	if d := p.Check("printf secret x"); d.Allowed || d.RuleID != "deny.secret" {
		t.Errorf("deny must win: %+v", d)
	}
	if d := p.Check("printf public"); !d.Allowed || d.RuleID != "allow.printf" {
		t.Errorf("allow must match: %+v", d)
	}
}

func TestPrefixMatchesWholeArgumentsOnly(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, Layer{Name: "l", Rules: CommandRules{Default: DefaultDeny, Allow: []CommandRule{
		{ID: "push", Executable: "/usr/bin/printf", Args: []string{"git", "push"}, Match: MatchPrefix},
		{ID: "status", Executable: "/usr/bin/printf", Args: []string{"status"}, Match: MatchExact},
		{ID: "empty", Executable: "/usr/bin/printf", Args: []string{""}, Match: MatchExact},
	}}})
	cases := []struct {
		command string
		rule    string
	}{
		{"printf git push", "push"},
		{"printf git push origin main", "push"},
		{"printf git pushx", "builtin.commands.allowlist_miss"},
		{"printf git", "builtin.commands.allowlist_miss"},
		{"printf gi t push", "builtin.commands.allowlist_miss"},
		{"printf status", "status"},
		{"printf status -s", "builtin.commands.allowlist_miss"},
		{"printf", "builtin.commands.allowlist_miss"},
		{"printf ''", "empty"},
		{"printf '' ''", "builtin.commands.allowlist_miss"},
	}
	for _, c := range cases {
		if d := p.Check(c.command); d.RuleID != c.rule {
			t.Errorf("Check(%q) decided by %q, want %q", c.command, d.RuleID, c.rule)
		}
	}
}

func TestEveryLayerMustAllow(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t,
		Layer{Name: "options", Rules: CommandRules{Default: DefaultAllow}},
		Layer{Name: "authority.a", Rules: CommandRules{Default: DefaultAllow}},
		Layer{Name: "authority.b", Rules: CommandRules{Default: DefaultDeny}},
	)
	d := p.Check("printf x")
	if d.Allowed || d.Layer != "authority.b" || d.RuleID != "builtin.commands.default_deny" || len(d.Layers) != 3 {
		t.Fatalf("the last layer must deny: %+v", d)
	}
	if d.Executable == nil || d.Executable.Path != "/usr/bin/printf" || len(d.Argv) != 2 {
		t.Fatalf("decision must carry argv and executable: %+v", d)
	}
}

func TestRulesMatchSymlinksAndHardLinksByInode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orig := filepath.Join(dir, "tool")
	b, err := os.ReadFile("/usr/bin/printf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orig, b, 0o755); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	soft := filepath.Join(dir, "soft")
	cp := filepath.Join(dir, "copy")
	if err := os.Link(orig, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(orig, soft); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	p := mustPolicy(t, Layer{Name: "l", Rules: CommandRules{Default: DefaultDeny, Allow: []CommandRule{
		{ID: "tool", Executable: orig, Match: MatchPrefix}}}})
	for cmd, want := range map[string]bool{orig + " x": true, hard + " x": true, soft + " x": true, cp + " x": false} {
		if d := p.Check(cmd); d.Allowed != want {
			t.Errorf("Check(%s) allowed=%v, want %v: %+v", filepath.Base(strings.Fields(cmd)[0]), d.Allowed, want, d)
		}
	}
	if d := p.Check(soft + " x"); d.Executable.Path != soft || d.Executable.Canonical != orig {
		t.Errorf("symlink must be executed by its own path and resolved canonically: %+v", d.Executable)
	}
}

func TestResolveRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		program string
		reason  ResolveReason
	}{
		{"", ResolveEmpty},
		{"./printf", ResolveRelativePath},
		{"bin/printf", ResolveRelativePath},
		{"no-such-program-pablo", ResolveNotFound},
		{"/no/such/program", ResolveNotFound},
		{"/usr/bin", ResolveNotRegular},
		{plain, ResolveNotExecutable},
	}
	for _, c := range cases {
		_, err := Resolve(c.program)
		var re *ResolveError
		if !errors.As(err, &re) || !errors.Is(err, ErrResolve) || re.Reason != c.reason {
			t.Errorf("Resolve(%q) = %v, want %s", c.program, err, c.reason)
		}
	}
	a, err := Resolve("/bin/printf")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Resolve("printf")
	if err != nil {
		t.Fatal(err)
	}
	if !a.SameFile(b) || b.Path != "/usr/bin/printf" {
		t.Errorf("/bin/printf and printf must be the same file found at /usr/bin/printf: %+v %+v", a, b)
	}
}

func TestRuleValidation(t *testing.T) {
	t.Parallel()
	ok := CommandRule{ID: "r", Executable: "/usr/bin/printf", Match: MatchPrefix}
	with := func(f func(r *CommandRule)) CommandRules {
		r := ok
		f(&r)
		return CommandRules{Default: DefaultDeny, Allow: []CommandRule{r}}
	}
	many := func(n int) []CommandRule {
		rules := make([]CommandRule, n)
		for i := range rules {
			rules[i] = ok
			rules[i].ID = "r" + strings.Repeat("x", i%60) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		}
		return rules
	}
	args := func(n, size int) []string {
		a := make([]string, n)
		for i := range a {
			a[i] = strings.Repeat("a", size)
		}
		return a
	}
	cases := []struct {
		name  string
		rules CommandRules
		valid bool
	}{
		{"valid", with(func(*CommandRule) {}), true},
		{"default must be allow or deny", CommandRules{Default: "maybe"}, false},
		{"empty default", CommandRules{}, false},
		{"empty id", with(func(r *CommandRule) { r.ID = "" }), false},
		{"id of 64 bytes", with(func(r *CommandRule) { r.ID = strings.Repeat("i", 64) }), true},
		{"id of 65 bytes", with(func(r *CommandRule) { r.ID = strings.Repeat("i", 65) }), false},
		{"id with space", with(func(r *CommandRule) { r.ID = "a b" }), false},
		{"relative executable", with(func(r *CommandRule) { r.Executable = "printf" }), false},
		{"executable of 4096 bytes", with(func(r *CommandRule) { r.Executable = "/" + strings.Repeat("e", 4095) }), true},
		{"executable of 4097 bytes", with(func(r *CommandRule) { r.Executable = "/" + strings.Repeat("e", 4096) }), false},
		{"executable with NUL", with(func(r *CommandRule) { r.Executable = "/a\x00" }), false},
		{"bad match", with(func(r *CommandRule) { r.Match = "substring" }), false},
		{"256 args", with(func(r *CommandRule) { r.Args = args(256, 1) }), true},
		{"257 args", with(func(r *CommandRule) { r.Args = args(257, 1) }), false},
		{"arg of 8192 bytes", with(func(r *CommandRule) { r.Args = args(1, 8192) }), true},
		{"arg of 8193 bytes", with(func(r *CommandRule) { r.Args = args(1, 8193) }), false},
		{"args of 65536 bytes", with(func(r *CommandRule) { r.Args = args(8, 8192) }), true},
		{"args of 65537 bytes", with(func(r *CommandRule) { r.Args = append(args(8, 8192), "a") }), false},
		{"arg with NUL", with(func(r *CommandRule) { r.Args = []string{"\x00"} }), false},
		{"128 rules", CommandRules{Default: DefaultDeny, Deny: many(128)}, true},
		{"129 rules", CommandRules{Default: DefaultDeny, Deny: many(129)}, false},
		{"duplicate id", CommandRules{Default: DefaultDeny, Allow: []CommandRule{ok}, Deny: []CommandRule{ok}}, false},
	}
	for _, c := range cases {
		_, err := NewPolicy(Layer{Name: "l", Rules: c.rules})
		if c.valid != (err == nil) {
			t.Errorf("%s: valid=%v but err=%v", c.name, c.valid, err)
		}
		if err != nil && (!errors.Is(err, ErrInvalidRule) || !errors.As(err, new(*RuleError))) {
			t.Errorf("%s: error is not a *RuleError: %v", c.name, err)
		}
	}
	if _, err := NewPolicy(); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("a policy without layers must be rejected: %v", err)
	}
	if _, err := NewPolicy(Layer{Name: "a", Rules: CommandRules{Default: DefaultDeny}}, Layer{Name: "a", Rules: CommandRules{Default: DefaultDeny}}); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("duplicate layer names must be rejected: %v", err)
	}
}

func TestRuleExamplesAreChecked(t *testing.T) {
	t.Parallel()
	rule := CommandRule{ID: "printf", Executable: "/usr/bin/printf", Match: MatchPrefix,
		MatchExamples:    []string{"printf hello", "/bin/printf a b"},
		NotMatchExamples: []string{"/bin/rm x", "printf x | sh", "env"},
	}
	if err := CheckExamples(CommandRules{Default: DefaultDeny, Allow: []CommandRule{rule}}); err != nil {
		t.Fatalf("examples must pass: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(r *CommandRule)
		want   string
		reason string
	}{
		{"match example that misses", func(r *CommandRule) { r.MatchExamples = []string{"printf ok", "env"} }, "match", "not_matched"},
		{"match example outside the grammar", func(r *CommandRule) { r.MatchExamples = []string{"printf $x"} }, "match", "syntax expansion"},
		{"not-match example that matches", func(r *CommandRule) { r.NotMatchExamples = []string{"printf x"} }, "not_match", "matched"},
	}
	for _, c := range cases {
		r := rule
		c.mutate(&r)
		err := CheckExamples(CommandRules{Default: DefaultDeny, Deny: []CommandRule{r}})
		var ee *ExampleError
		if !errors.As(err, &ee) || !errors.Is(err, ErrExample) || ee.RuleID != "printf" || ee.Want != c.want || ee.Reason != c.reason {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
}
