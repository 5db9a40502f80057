package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadString writes doc as deployment.toml in a fresh directory and loads it
// with a workspace binding.
func loadString(t testing.TB, doc string, mod ...func(*LoadOptions)) (*Deployment, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "deployment.toml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	opts := LoadOptions{Config: p, Bindings: map[string]string{"workspace": ws}}
	for _, m := range mod {
		m(&opts)
	}
	return Load(opts)
}

func wantCode(t *testing.T, err error, code Code, option string) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want %s, got %v", code, err)
	}
	if ce.Code != code {
		t.Fatalf("want %s, got %s (%v)", code, ce.Code, ce)
	}
	if option != "" && ce.Option != option {
		t.Fatalf("want option %s, got %s (%v)", option, ce.Option, ce)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("errors.Is(err, ErrInvalid) is false")
	}
	return ce
}

func TestUnknownKeyFailsWithPathAndLine(t *testing.T) {
	_, err := loadString(t, "schema_version = 1\n\n[options.shell]\nenabled = false\nenabeld = true\n")
	ce := wantCode(t, err, CodeUnknownOption, "/options/shell/enabeld")
	if ce.Line != 5 || ce.Source != "deployment.toml" {
		t.Fatalf("want deployment.toml:5, got %s:%d", ce.Source, ce.Line)
	}
	if !strings.Contains(ce.Error(), "deployment.toml:5") {
		t.Fatalf("message lacks file:line: %v", ce)
	}
}

// TestUnknownKeySuggestsTheNearestKey: an unknown key names the nearest
// key its table knows, at the top level and inside options, and suggests
// nothing when no key is near.
func TestUnknownKeySuggestsTheNearestKey(t *testing.T) {
	for _, c := range []struct{ doc, option, want string }{
		{"schema_version = 1\n[options.shell]\nenabeld = true\n", "/options/shell/enabeld", `unknown option "enabeld"; did you mean "enabled"?`},
		{"schema_version = 1\n[optoins.shell]\nenabled = true\n", "/optoins", `unknown option "optoins"; did you mean "options"?`},
	} {
		_, err := loadString(t, c.doc)
		ce := wantCode(t, err, CodeUnknownOption, c.option)
		if !strings.Contains(ce.Error(), c.want) {
			t.Errorf("%s: want %q in %v", c.option, c.want, ce)
		}
	}
	_, err := loadString(t, "schema_version = 1\n[options.shell]\nzzzzzz = true\n")
	if ce := wantCode(t, err, CodeUnknownOption, "/options/shell/zzzzzz"); strings.Contains(ce.Error(), "did you mean") {
		t.Errorf("a key near nothing got a suggestion: %v", ce)
	}
}

func TestUnknownKeyInsideArrayTable(t *testing.T) {
	_, err := loadString(t, "schema_version = 1\n[[authority]]\nid = \"a\"\n[[authority]]\nid = \"b\"\n[authority.policy.write_roots]\ndefault = \"deny\"\nbogus = 1\n")
	ce := wantCode(t, err, CodeUnknownOption, "/authority/1/policy/write_roots/bogus")
	if ce.Line != 8 {
		t.Fatalf("want line 8, got %d", ce.Line)
	}
}

func TestRelativeStdioCommandNamesServer(t *testing.T) {
	_, err := loadString(t, `schema_version = 1
[options.mcp.servers.records]
transport = "stdio"
command = "records-server"
`)
	ce := wantCode(t, err, CodeInvalidValue, "/options/mcp/servers/records/command")
	if !strings.Contains(ce.Error(), "absolute") || ce.Line != 4 {
		t.Fatalf("unhelpful error: %v", ce)
	}
}

func TestSchemaVersionRules(t *testing.T) {
	for _, doc := range []string{"", "schema_version = 0", "schema_version = 2", `schema_version = "1"`, "schema_version = 1.0"} {
		_, err := loadString(t, doc+"\n")
		var ce *Error
		if !errors.As(err, &ce) || (ce.Code != CodeSchemaVersion && !(doc == "schema_version = 1.0" && ce.Code == CodeInvalidValue)) {
			t.Errorf("%q: want config_schema_version, got %v", doc, err)
		}
	}
}

func TestRejectedValueKinds(t *testing.T) {
	cases := map[string]struct {
		doc  string
		code Code
	}{
		"float":           {"[options.limits]\nmax_run_duration_ms = 1.5", CodeInvalidValue},
		"date":            {"[options.run]\ninstructions = 2024-01-01", CodeInvalidValue},
		"duplicate key":   {"[options.shell]\nenabled = true\nenabled = false", CodeInvalidValue},
		"inline secret":   {"[options.mcp.servers.e]\ntransport = \"http\"\nurl = \"https://x.test/mcp\"\nheaders = { x-token = \"sk live value\" }", CodeInvalidValue},
		"future feature":  {"[options.interfaces.tui]\nenabled = false", CodeUnsupportedFeature},
		"requires":        {"requires = []", CodeUnsupportedFeature},
		"bad enum":        {"[options.filesystem]\nenabled = \"yes\"", CodeInvalidValue},
		"string count":    {"[options.limits]\nmax_total_tokens = 5", CodeInvalidValue},
		"over range":      {"[options.limits]\nmax_run_duration_ms = 86400001", CodeInvalidValue},
		"plain http mcp":  {"[options.mcp.servers.e]\ntransport = \"http\"\nurl = \"http://mcp.example.test/mcp\"", CodeInvalidValue},
		"url query":       {"[options.mcp.servers.e]\ntransport = \"http\"\nurl = \"https://mcp.example.test/mcp?x=1\"", CodeInvalidValue},
		"url userinfo":    {"[options.mcp.servers.e]\ntransport = \"http\"\nurl = \"https://u:p@mcp.example.test/mcp\"", CodeInvalidValue},
		"write w/o fs":    {"[options.filesystem]\nenabled = false\nwrite = true", CodeInvalidValue},
		"capture w/o":     {"[options.trace]\ncapture_content = true", CodeInvalidValue},
		"builtin rule":    {"[options.policy.tools]\ndefault = \"deny\"\nallow = [{ id = \"builtin.x\", value = \"fs.read\" }]", CodeInvalidValue},
		"dup rule id":     {"[options.policy.tools]\ndefault = \"deny\"\nallow = [{ id = \"r\", value = \"fs.read\" }]\n[options.policy.read_roots]\ndefault = \"deny\"\nallow = [{ id = \"r\", value = \"docs\" }]", CodeConflict},
		"no default":      {"[options.policy.tools]\nallow = [{ id = \"r\", value = \"fs.read\" }]", CodeInvalidValue},
		"path string":     {"[options.run]\nworkspace = \"./work\"", CodeInvalidValue},
		"path escape":     {"[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \"../..\" }", CodeInvalidValue},
		"path absolute":   {"[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \"/etc\" }", CodeInvalidValue},
		"ws on ws":        {"[options.run]\nworkspace = { base = \"workspace\", path = \".\" }", CodeInvalidValue},
		"bad template":    {"[options.trace]\npath = { base = \"workspace\", path = \"t-{user}.jsonl\" }", CodeInvalidValue},
		"cred consumer":   {"[credentials.k]\nconsumer = \"mcp.headers\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n[options.model]\nprovider = \"openrouter\"\ncredential = \"k\"", CodeInvalidValue},
		"dangling cred":   {"[options.mcp.servers.e]\ntransport = \"http\"\nurl = \"https://x.test/mcp\"\nheaders = { x-token = \"missing\" }", CodeInvalidValue},
		"vercel endpoint": {"[options.model]\nprovider = \"vercel\"\nendpoint = \"https://elsewhere.test/v1/chat/completions\"", CodeInvalidValue},
		"routing header":  {"[credentials.k]\nconsumer = \"mcp.headers\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n[options.mcp.servers.e]\ntransport = \"http\"\nurl = \"https://x.test/mcp\"\nheaders = { mcp-session-id = \"k\" }", CodeInvalidValue},
		"unknown profile": {"profile = \"nope\"", CodeUnknownProfile},
		"profile cycle":   {"profile = \"a\"\n[profiles.a]\nextends = [\"b\"]\n[profiles.b]\nextends = [\"a\"]", CodeProfileCycle},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := loadString(t, "schema_version = 1\n"+c.doc+"\n")
			wantCode(t, err, c.code, "")
		})
	}
}

func TestOpenAICompatibleAndScriptProviders(t *testing.T) {
	_, err := loadString(t, `schema_version = 1
[credentials.local]
consumer = "provider.openai_compatible"
sources = [{ kind = "environment", name = "LOCAL_KEY" }]
[options.model]
provider = "openai_compatible"
id = "llama3"
endpoint = "https://llm.internal.test/v1/chat/completions"
credential = "local"
`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = loadString(t, "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"workspace\", path = \"turns.json\" }\n")
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoopbackHTTPOnlyAsUnlockedFixture(t *testing.T) {
	doc := "schema_version = 1\n[options.mcp.servers.e]\ntransport = \"http\"\nurl = \"http://127.0.0.1:8080/mcp\"\n"
	if _, err := loadString(t, doc); err == nil {
		t.Fatal("plain loopback http must need the host fixture flag")
	}
	if _, err := loadString(t, doc, func(o *LoadOptions) { o.LoopbackHTTP = true }); err != nil {
		t.Fatal(err)
	}
	_, err := loadString(t, doc, func(o *LoadOptions) { o.LoopbackHTTP = true; o.Locked = true })
	wantCode(t, err, CodeInvalidValue, "/options/mcp/servers/e/url")
}

func TestLockedOverridesOnlyNarrow(t *testing.T) {
	doc := "schema_version = 1\n[deployment]\nlocked = true\nallowed_run_overrides = [\"input\", \"limits.max_run_duration_ms\"]\n[options.limits]\nmax_run_duration_ms = 60000\n"
	d, err := loadString(t, doc, func(o *LoadOptions) {
		o.Overrides = []Override{{Target: "limits.max_run_duration_ms", Value: int64(1000)}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Options.Limits.MaxRunDurationMS != 1000 {
		t.Fatalf("override not applied: %d", d.Options.Limits.MaxRunDurationMS)
	}
	_, err = loadString(t, doc, func(o *LoadOptions) {
		o.Overrides = []Override{{Target: "limits.max_run_duration_ms", Value: int64(120000)}}
	})
	wantCode(t, err, CodeOverrideForbidden, "")
	_, err = loadString(t, doc, func(o *LoadOptions) {
		o.Overrides = []Override{{Target: "filesystem.write", Value: true}}
	})
	wantCode(t, err, CodeOverrideForbidden, "/options/filesystem/write")
}

// TestLockedDeploymentAcceptsUnlistedNarrowing: under lock a switch may be
// turned off and a ceiling lowered without allowed_run_overrides listing
// it; raising one, turning one on, or anything that is not a switch or a
// ceiling (the model, the policy) stays refused.
func TestLockedDeploymentAcceptsUnlistedNarrowing(t *testing.T) {
	doc := "schema_version = 1\n[deployment]\nlocked = true\n[options.limits]\nmax_model_calls = 8\n"
	d, err := loadString(t, doc, func(o *LoadOptions) {
		o.Overrides = []Override{{Target: "shell.enabled", Value: false}, {Target: "limits.max_model_calls", Value: int64(3)}, {Target: "limits.max_cost_microusd", Value: "5000"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := d.Options.Limits.MaxModelCalls.Value(); d.Options.Shell.Enabled || n != 3 {
		t.Fatalf("narrowing not applied: shell %v, model calls %d", d.Options.Shell.Enabled, d.Options.Limits.MaxModelCalls)
	}
	for _, widen := range []Override{
		{Target: "limits.max_model_calls", Value: int64(9)},
		{Target: "filesystem.write", Value: true},
		{Target: "model.id", Value: "other"},
		{Target: "policy", Value: map[string]any{}},
		{Target: "model.reasoning", Value: "high"},
	} {
		_, err := loadString(t, doc, func(o *LoadOptions) { o.Overrides = []Override{widen} })
		wantCode(t, err, CodeOverrideForbidden, "")
	}
}

// TestModelOverrideConflictsWithASelectedRoute: with options.model_route
// set, the route chooses the model, so a run's model.provider or model.id
// override (--provider, --model) is config_conflict, not silently unused.
func TestModelOverrideConflictsWithASelectedRoute(t *testing.T) {
	doc := "schema_version = 1\n[options]\nmodel_route = \"main\"\n[options.models.fast]\nprovider = \"openai\"\nid = \"gpt-5-mini\"\ncredential = \"openai\"\n[options.routes.main]\nentries = [{ model = \"fast\" }]\n[credentials.openai]\nconsumer = \"provider.openai\"\nsources = [{ kind = \"environment\", name = \"OPENAI_API_KEY\" }]\n"
	if _, err := loadString(t, doc); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Override{{Target: "model.id", Value: "gpt-5"}, {Target: "model.provider", Value: "openai"}} {
		_, err := loadString(t, doc, func(lo *LoadOptions) { lo.Overrides = []Override{o} })
		ce := wantCode(t, err, CodeConflict, "/options/model/"+strings.TrimPrefix(o.Target, "model."))
		if !strings.Contains(ce.Message, `route "main"`) {
			t.Errorf("the conflict does not name the route: %v", ce)
		}
	}
}

// TestNarrowingRunOverridesListedAdmitsOnlyTheList: an entry that writes
// narrowing_run_overrides = "listed" takes the reference's rule: an
// unlisted target is refused even when the value narrows.
func TestNarrowingRunOverridesListedAdmitsOnlyTheList(t *testing.T) {
	doc := "schema_version = 1\n[deployment]\nlocked = true\nnarrowing_run_overrides = \"listed\"\nallowed_run_overrides = [\"input\", \"limits.max_tool_calls\"]\n"
	if _, err := loadString(t, doc, func(o *LoadOptions) { o.Overrides = []Override{{Target: "limits.max_tool_calls", Value: int64(1)}} }); err != nil {
		t.Fatal(err)
	}
	_, err := loadString(t, doc, func(o *LoadOptions) { o.Overrides = []Override{{Target: "shell.enabled", Value: false}} })
	ce := wantCode(t, err, CodeOverrideForbidden, "/options/shell/enabled")
	if !strings.Contains(ce.Message, `narrowing_run_overrides = "listed"`) {
		t.Fatalf("the refusal does not say why: %v", ce)
	}
}

func TestAuthorityCeilingViolation(t *testing.T) {
	_, err := loadString(t, `schema_version = 1
[[authority]]
id = "ceiling"
tool_names = ["fs.read", "fs.list", "fs.search"]
`)
	ce := wantCode(t, err, CodeAuthorityViolation, "/authority/0/tool_names")
	if ce.AuthorityID != "ceiling" {
		t.Fatalf("authority id not named: %v", ce)
	}
	_, err = loadString(t, `schema_version = 1
[options.limits]
max_tool_calls = "unlimited"
[[authority]]
id = "ceiling"
limits = { max_tool_calls = 8 }
`)
	wantCode(t, err, CodeAuthorityViolation, "/authority/0/limits/max_tool_calls")
}

func TestImportRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	ws := t.TempDir()
	load := func(entry string) error {
		_, err := Load(LoadOptions{Config: entry, Bindings: map[string]string{"workspace": ws}})
		return err
	}
	write("a.toml", "schema_version = 1\nimports = [\"b.toml\"]\n")
	write("b.toml", "schema_version = 1\nimports = [\"a.toml\"]\n")
	wantCode(t, load(filepath.Join(dir, "a.toml")), CodeImportCycle, "")

	write("d1.toml", "schema_version = 1\nimports = [\"m/x.toml\", \"m/y.toml\"]\n")
	write("m/x.toml", "schema_version = 1\nimports = [\"z.toml\"]\n")
	write("m/y.toml", "schema_version = 1\nimports = [\"z.toml\"]\n")
	write("m/z.toml", "schema_version = 1\n")
	wantCode(t, load(filepath.Join(dir, "d1.toml")), CodeDuplicateImport, "")

	write("esc.toml", "schema_version = 1\nimports = [\"../outside.toml\"]\n")
	wantCode(t, load(filepath.Join(dir, "esc.toml")), CodeImportPath, "/imports/0")
	write("abs.toml", "schema_version = 1\nimports = [\"/etc/passwd\"]\n")
	wantCode(t, load(filepath.Join(dir, "abs.toml")), CodeImportPath, "/imports/0")

	os.Symlink(filepath.Join(dir, "m/z.toml"), filepath.Join(dir, "link.toml"))
	write("sym.toml", "schema_version = 1\nimports = [\"link.toml\"]\n")
	wantCode(t, load(filepath.Join(dir, "sym.toml")), CodeImportPath, "/imports/0")

	write("ver.toml", "schema_version = 1\nimports = [\"m/old.toml\"]\n")
	write("m/old.toml", "schema_version = 2\n")
	wantCode(t, load(filepath.Join(dir, "ver.toml")), CodeSchemaVersion, "/schema_version")

	write("dep.toml", "schema_version = 1\nimports = [\"m/dep.toml\"]\n")
	write("m/dep.toml", "schema_version = 1\n[deployment]\nlocked = false\n")
	wantCode(t, load(filepath.Join(dir, "dep.toml")), CodeInvalidValue, "/deployment")
}

func TestResolverBoundsAtLimitAndOnePast(t *testing.T) {
	imports := func(n int) string {
		var b strings.Builder
		b.WriteString("schema_version = 1\nimports = [")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%q,", fmt.Sprintf("i%d.toml", i))
		}
		b.WriteString("]\n")
		return b.String()
	}
	for _, c := range []struct {
		n  int
		ok bool
	}{{maxImportsPerFile, true}, {maxImportsPerFile + 1, false}} {
		dir := t.TempDir()
		for i := 0; i < c.n; i++ {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("i%d.toml", i)), []byte("schema_version = 1\n"), 0o600)
		}
		entry := filepath.Join(dir, "entry.toml")
		os.WriteFile(entry, []byte(imports(c.n)), 0o600)
		_, err := Load(LoadOptions{Config: entry, Bindings: map[string]string{"workspace": t.TempDir()}})
		if (err == nil) != c.ok {
			t.Errorf("%d imports: ok=%v, err=%v", c.n, c.ok, err)
		}
	}
	// Import depth: entry is depth 1.
	for _, c := range []struct {
		depth int
		ok    bool
	}{{maxFileDepth, true}, {maxFileDepth + 1, false}} {
		dir := t.TempDir()
		for i := 1; i <= c.depth; i++ {
			body := "schema_version = 1\n"
			if i < c.depth {
				body += fmt.Sprintf("imports = [\"f%d.toml\"]\n", i+1)
			}
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.toml", i)), []byte(body), 0o600)
		}
		_, err := Load(LoadOptions{Config: filepath.Join(dir, "f1.toml"), Bindings: map[string]string{"workspace": t.TempDir()}})
		if (err == nil) != c.ok {
			t.Errorf("depth %d: ok=%v, err=%v", c.depth, c.ok, err)
		}
	}
	// File size: 1 MiB exactly loads, one byte more fails.
	for _, c := range []struct {
		size int
		ok   bool
	}{{maxFileBytes, true}, {maxFileBytes + 1, false}} {
		head := "schema_version = 1\n"
		doc := head + "#" + strings.Repeat("x", c.size-len(head)-2) + "\n"
		_, err := loadString(t, doc)
		if (err == nil) != c.ok {
			t.Errorf("size %d: ok=%v, err=%v", c.size, c.ok, err)
		}
	}
	// Credentials: 64 load, 65 fail.
	for _, c := range []struct {
		n  int
		ok bool
	}{{maxNamed, true}, {maxNamed + 1, false}} {
		var b strings.Builder
		b.WriteString("schema_version = 1\n")
		for i := 0; i < c.n; i++ {
			fmt.Fprintf(&b, "[credentials.c%d]\nconsumer = \"mcp.headers\"\nsources = [{ kind = \"environment\", name = \"V%d\" }]\n", i, i)
		}
		_, err := loadString(t, b.String())
		if (err == nil) != c.ok {
			t.Errorf("%d credentials: ok=%v, err=%v", c.n, c.ok, err)
		}
	}
	// Rules per dimension: 128 load, 129 fail.
	for _, c := range []struct {
		n  int
		ok bool
	}{{maxRulesPerDim, true}, {maxRulesPerDim + 1, false}} {
		var b strings.Builder
		b.WriteString("schema_version = 1\n[options.policy.read_roots]\ndefault = \"deny\"\nallow = [")
		for i := 0; i < c.n; i++ {
			fmt.Fprintf(&b, "{ id = \"r%d\", value = \"d%d\" },", i, i)
		}
		b.WriteString("]\n")
		_, err := loadString(t, b.String())
		if (err == nil) != c.ok {
			t.Errorf("%d rules: ok=%v, err=%v", c.n, c.ok, err)
		}
	}
	// Nesting: 32 levels of arrays inside a value.
	deep := func(n int) string {
		return "schema_version = 1\n[options.run]\ninstructions = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
	}
	_, err := loadString(t, deep(40))
	wantCode(t, err, CodeLimit, "")
}

func TestEnvironmentBindings(t *testing.T) {
	doc := "schema_version = 1\n[environment.PABLO_CONFIG_TOOL_CALLS]\noption = \"limits.max_tool_calls\"\nrequired = false\n"
	for _, c := range []struct {
		val  string
		set  bool
		ok   bool
		want string
	}{
		{"", false, true, "unlimited"}, {"7", true, true, "7"}, {"0", true, true, "0"}, {"unlimited", true, true, "unlimited"},
		{"", true, false, ""}, {"1.0", true, false, ""}, {"-1", true, false, ""}, {"4294967296", true, false, ""},
	} {
		d, err := loadString(t, doc, func(o *LoadOptions) {
			o.LookupEnv = func(name string) (string, bool) {
				if name == "PABLO_CONFIG_TOOL_CALLS" && c.set {
					return c.val, true
				}
				return "", false
			}
		})
		if !c.ok {
			ce := wantCode(t, err, CodeEnvironmentValue, "")
			if c.val != "" && strings.Contains(ce.Error(), c.val) {
				t.Errorf("the value %q is echoed: %v", c.val, ce)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.val, err)
		}
		if got := d.Options.Limits.MaxToolCalls.String(); got != c.want {
			t.Errorf("%q: got %s", c.val, got)
		}
	}
	_, err := loadString(t, "schema_version = 1\n[environment.NEED]\noption = \"model.id\"\nrequired = true\n")
	wantCode(t, err, CodeEnvironmentMissing, "")
}

func TestFingerprintStableAndMeaningful(t *testing.T) {
	a, err := loadString(t, "schema_version = 1\n[options.shell]\nenabled = false\n")
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadString(t, "# a comment changes nothing\nschema_version = 1\n\n[options.shell]\nenabled = false\n")
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint != b.Fingerprint {
		t.Fatal("formatting changed the fingerprint")
	}
	if a.InputFingerprint == b.InputFingerprint {
		t.Fatal("different sources must change the input fingerprint")
	}
	c, _ := loadString(t, "schema_version = 1\n[options.shell]\nenabled = true\n")
	if c.Fingerprint == a.Fingerprint {
		t.Fatal("a different meaning kept the fingerprint")
	}
}

func TestListOperationsAndUnset(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.toml"), []byte("schema_version = 1\n[options.policy.read_roots]\ndefault = \"deny\"\nallow = [{ id = \"read.src\", value = \"src\" }]\n[options.trace]\npath = { base = \"workspace\", path = \"t.jsonl\" }\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "entry.toml"), []byte("schema_version = 1\nimports = [\"base.toml\"]\n[options.skills]\nactivate = { mode = \"append\", items = [\"team/review\"] }\n[options.trace]\npath = { unset = true }\n"), 0o600)
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "entry.toml"), Bindings: map[string]string{"workspace": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Options.Trace.Path != nil {
		t.Fatal("{unset = true} did not clear trace.path")
	}
	if len(d.Options.Skills.Activate) != 1 || d.Options.Skills.Activate[0] != "team/review" {
		t.Fatalf("append on an empty list: %v", d.Options.Skills.Activate)
	}
}

func TestSeedSnippetsLoad(t *testing.T) {
	bin := t.TempDir()
	snippets := []string{
		`[credentials.records]
consumer = "mcp.environment"
sources = [{ kind = "environment", name = "RECORDS_TOKEN" }]

[options.mcp.servers.records]
transport = "stdio"
command = "/absolute/path/to/records-server"
args = ["--stdio"]
cwd = { base = "binding", name = "mcp", path = "." }
env = { RECORDS_TOKEN = "records" }
required = true
startup_timeout_ms = 30000
operation_timeout_ms = 60000`,
		`[credentials.evidence]
consumer = "mcp.headers"
sources = [{ kind = "environment", name = "EVIDENCE_TOKEN" }]

[options.mcp.servers.evidence]
transport = "http"
url = "https://mcp.example.com/mcp"
headers = { x-evidence-token = "evidence" }
required = true
startup_timeout_ms = 30000
operation_timeout_ms = 60000`,
		`[options.mcp.servers.evidence]
transport = "http"
url = "https://mcp.example.com/mcp"

[[options.mcp.policies]]
[options.mcp.policies.servers]
default = "deny"
allow = [{ id = "support.evidence-server", value = "evidence" }]

[options.mcp.policies.tools]
default = "deny"
allow = [{ id = "support.read-evidence", value = "mcp/evidence/read_evidence" }]`,
		`[options.skills.roots]
team = { base = "binding", name = "skills", path = "." }

[options.skills]
activate = ["team/evidence-review"]`,
		`[options.children]
enabled = true`,
		`[options.a2a.remotes.reviewer]
card_url = "https://agent.example.com/.well-known/agent-card.json"
endpoint = "https://agent.example.com/rpc"`,
	}
	for i, s := range snippets {
		_, err := loadString(t, "schema_version = 1\n"+s+"\n", func(o *LoadOptions) {
			o.Bindings["mcp"], o.Bindings["skills"] = bin, bin
		})
		if err != nil {
			t.Errorf("snippet %d: %v", i, err)
		}
	}
}

// TestProductionPresetIsLockedWithReadOnlyLayer: the original's production
// preset and the one Pablo ships.
func TestProductionPresetIsLockedWithReadOnlyLayer(t *testing.T) {
	for name, dir := range map[string]string{"original": filepath.Join(originals, "presets"), "shipped": shipped} {
		t.Run(name, func(t *testing.T) {
			d, err := Load(LoadOptions{Config: filepath.Join(dir, "production.toml"),
				Bindings: map[string]string{"workspace": t.TempDir(), "preset": dir}})
			if err != nil {
				t.Fatal(err)
			}
			if !d.Locked() {
				t.Fatal("production must be locked")
			}
			layers := d.AuthorityLayers()
			if len(layers) != 1 || layers[0].ID != "production.read_only" {
				t.Fatalf("layers: %+v", layers)
			}
			if got := d.AllowedRunOverrides(); strings.Join(got, ",") != "input,limits.max_run_duration_ms" {
				t.Fatalf("overrides: %v", got)
			}
		})
	}
}

func TestPolicyListAppendAcrossImports(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.toml"), []byte("schema_version = 1\n[options.policy.read_roots]\ndefault = \"deny\"\nallow = [{ id = \"read.src\", value = \"src\" }]\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "entry.toml"), []byte("schema_version = 1\nimports = [\"base.toml\"]\n[options.policy.read_roots]\ndefault = \"deny\"\nallow = { mode = \"append\", items = [{ id = \"read.docs\", value = \"docs\" }] }\n"), 0o600)
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "entry.toml"), Bindings: map[string]string{"workspace": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	rules := d.Options.Policy.ReadRoots
	if rules == nil || len(rules.Allow) != 2 || rules.Allow[0].ID != "read.src" || rules.Allow[1].ID != "read.docs" {
		t.Fatalf("append across imports: %+v", rules)
	}
}

func TestCommandRuleExamplesAreChecked(t *testing.T) {
	good := "schema_version = 1\n[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"git.status\", executable = \"/usr/bin/printf\", args = [\"status\"], match = \"prefix\", examples = { match = [\"/usr/bin/printf status\"], not_match = [\"/usr/bin/printf push\"] } }]\n"
	if _, err := loadString(t, good); err != nil {
		t.Fatalf("passing examples: %v", err)
	}
	bad := strings.Replace(good, `not_match = ["/usr/bin/printf push"]`, `not_match = ["/usr/bin/printf status --short"]`, 1)
	_, err := loadString(t, bad)
	ce := wantCode(t, err, CodeInvalidValue, "/options/shell/commands")
	if !strings.Contains(ce.Error(), "git.status") {
		t.Fatalf("the failing rule is not named: %v", ce)
	}
}
