package deployment_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/deployment"
)

// TestEveryLayerRaisesTheOneDiagnosticType: a deployment error is a
// *deployment.Error wherever it was raised (the deployment language while
// loading, the root while building a runtime), and a path that does not
// resolve is a *deployment.PathError, so one errors.As serves a host; each
// is ErrInvalid and pablo.ErrConfig, and its message is the diagnostic's.
func TestEveryLayerRaisesTheOneDiagnosticType(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(t *testing.T, err error, code deployment.Code, option, msg string) {
		t.Helper()
		var de *deployment.Error
		if !errors.As(err, &de) {
			t.Fatalf("want a *deployment.Error, got %T: %v", err, err)
		}
		if de.Code != code || de.Option != option {
			t.Errorf("got %s at %s, want %s at %s", de.Code, de.Option, code, option)
		}
		if !errors.Is(err, deployment.ErrInvalid) || !errors.Is(err, pablo.ErrConfig) {
			t.Errorf("%v is not ErrInvalid", err)
		}
		if err.Error() != msg {
			t.Errorf("message:\n got %q\nwant %q", err.Error(), msg)
		}
	}

	t.Run("the deployment language", func(t *testing.T) {
		_, err := pablo.Load(pablo.LoadOptions{Config: write("load.toml", "schema_version = 1\n[options.shell]\nenabeld = false\n"), WorkDir: dir})
		check(t, err, deployment.CodeUnknownOption, "/options/shell/enabeld", `config_unknown_option load.toml:3 at /options/shell/enabeld: unknown option "enabeld"; did you mean "enabled"?`)
	})
	t.Run("the root", func(t *testing.T) {
		write("script.json", `{"turns": [{"txt": ["x"]}]}`)
		d, err := pablo.Load(pablo.LoadOptions{Config: write("script.toml", `schema_version = 1
[options.model]
provider = "script"
script = { base = "config", path = "script.json" }
[options.shell]
enabled = false
`), Bindings: map[string]string{"workspace": dir}, WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.NewRuntime(context.Background(), pablo.HostOptions{})
		check(t, err, deployment.CodeInvalidValue, "/options/model/script", `config_invalid_value at /options/model/script: script: json: unknown field "txt"`)
		if !errors.Is(err, pablo.ErrScript) {
			t.Errorf("%v lost its cause", err)
		}
	})
	t.Run("a path", func(t *testing.T) {
		d, err := pablo.Load(pablo.LoadOptions{Config: write("path.toml", `schema_version = 1
[options.run]
workspace = { base = "binding", name = "work", path = "." }
`), WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		err = d.CheckPaths()
		var pe *deployment.PathError
		if !errors.As(err, &pe) || !pe.Unbound || pe.Ref.Name != "work" {
			t.Fatalf("want an unbound *deployment.PathError for binding work, got %T: %v", err, err)
		}
		if !errors.Is(err, pablo.ErrConfig) {
			t.Errorf("%v is not pablo.ErrConfig", err)
		}
	})
}
