package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLayer writes a preference file and returns its path.
func writeLayer(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "layer.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPreferenceLayersApplyBetweenDefaultsAndEntry: defaults < user <
// workspace < entry < overrides, each key by itself.
func TestPreferenceLayersApplyBetweenDefaultsAndEntry(t *testing.T) {
	user := writeLayer(t, "schema_version = 1\n[options.limits]\nmax_model_calls = 5\nmax_tool_calls = 5\nmax_events = \"5000\"\n")
	ws := writeLayer(t, "schema_version = 1\n[options.limits]\nmax_tool_calls = 6\nmax_events = \"6000\"\n")
	entry := "schema_version = 1\n[options.limits]\nmax_events = \"7000\"\n"
	d, err := loadString(t, entry, func(o *LoadOptions) { o.UserConfig, o.WorkspaceConfig = user, ws })
	if err != nil {
		t.Fatal(err)
	}
	mc, _ := d.Options.Limits.MaxModelCalls.Value()
	tc, _ := d.Options.Limits.MaxToolCalls.Value()
	ev, _ := d.Options.Limits.MaxEvents.Value()
	if mc != 5 || tc != 6 || ev != 7000 {
		t.Fatalf("precedence: model calls %d (want user's 5), tool calls %d (want workspace's 6), events %d (want entry's 7000)", mc, tc, ev)
	}
	kinds := []string{}
	for _, s := range d.Sources {
		kinds = append(kinds, s.Kind)
	}
	if got := strings.Join(kinds, ","); got != "defaults,user,workspace,file" {
		t.Fatalf("sources in precedence order: %s", got)
	}
}

// TestPreferenceLayerHoldsOptionsOnly: a user or workspace file that
// declares a credential, authority, imports or deployment controls is
// refused, so trusting a file for preferences never adds a secret source
// or lifts a ceiling.
func TestPreferenceLayerHoldsOptionsOnly(t *testing.T) {
	for _, body := range []string{
		"schema_version = 1\n[credentials.k]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n",
		"schema_version = 1\n[[authority]]\nid = \"a\"\n",
		"schema_version = 1\nimports = [\"x.toml\"]\n",
		"schema_version = 1\n[deployment]\nlocked = false\n",
	} {
		_, err := loadString(t, "schema_version = 1\n", func(o *LoadOptions) { o.WorkspaceConfig = writeLayer(t, body) })
		ce := wantCode(t, err, CodeInvalidValue, "")
		if !strings.Contains(ce.Message, "holds options only") || !strings.HasPrefix(ce.Source, "workspace:") {
			t.Fatalf("the refusal does not name the layer and the rule: %v", ce)
		}
	}
}

// TestLockedDeploymentRefusesPreferenceLayers: lock is decided by the
// entry before a user or workspace file is opened, and a named one is
// refused (the file is never read: a missing path gives the same error).
func TestLockedDeploymentRefusesPreferenceLayers(t *testing.T) {
	for _, set := range []func(*LoadOptions){
		func(o *LoadOptions) { o.UserConfig = "/nonexistent/user.toml" },
		func(o *LoadOptions) { o.WorkspaceConfig = "/nonexistent/ws.toml" },
	} {
		_, err := loadString(t, "schema_version = 1\n[deployment]\nlocked = true\n", set)
		wantCode(t, err, CodeOverrideForbidden, "")
	}
}

// TestPreferenceLayerSourcePathsStayInTheConfigRoot: a source path is
// relative to its file and stands for a config path (REFERENCE §1.5), so
// it must land inside the config root, in a preference file as in an
// imported one. A user or workspace file inside the root may write one
// (it resolves beside the file); one outside the root (the usual user
// file) cannot name a file beside itself, and the refusal says why and
// what to write instead.
func TestPreferenceLayerSourcePathsStayInTheConfigRoot(t *testing.T) {
	body := "schema_version = 1\n[options.skills.roots]\nmine = { base = \"source\", path = \"skills\" }\n"
	for _, set := range []func(*LoadOptions, string){
		func(o *LoadOptions, p string) { o.UserConfig = p },
		func(o *LoadOptions, p string) { o.WorkspaceConfig = p },
	} {
		_, err := loadString(t, "schema_version = 1\n", func(o *LoadOptions) { set(o, writeLayer(t, body)) })
		ce := wantCode(t, err, CodeInvalidValue, "/options/skills/roots/mine")
		if !strings.Contains(ce.Message, "outside the config root") || !strings.Contains(ce.Message, "binding") || ce.Line != 3 {
			t.Errorf("the refusal does not say why or what to write: %v", ce)
		}
	}
	// Inside the root, the same file names the directory beside it.
	dir := t.TempDir()
	entry := filepath.Join(dir, "deployment.toml")
	os.WriteFile(entry, []byte("schema_version = 1\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "prefs", "skills"), 0o700)
	user := filepath.Join(dir, "prefs", "user.toml")
	os.WriteFile(user, []byte(body), 0o600)
	os.Mkdir(filepath.Join(dir, "work"), 0o700)
	d, err := Load(LoadOptions{Config: entry, UserConfig: user, Bindings: map[string]string{"workspace": filepath.Join(dir, "work")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Options.Skills.Roots["mine"]; got.Base != "config" || got.Path != "prefs/skills" {
		t.Errorf("the user file's source path resolved to %+v, want config prefs/skills", got)
	}
}
