package pablo_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/deployment"
)

// TestLibraryErrorsNameBindingsNotFlags: the library speaks of bindings; a
// CLI flag spelling ("--bind") belongs to the host that prints the error.
func TestLibraryErrorsNameBindingsNotFlags(t *testing.T) {
	demo := filepath.Join("examples", "pablo", "demo")
	cases := []struct {
		name     string
		bindings map[string]string
		binding  string
	}{
		{"missing directory", map[string]string{"workspace": filepath.Join(demo, "work"), "skills": filepath.Join(t.TempDir(), "absent")}, "skills"},
		{"binding not given", map[string]string{"workspace": filepath.Join(demo, "work")}, "skills"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(demo, "deployment.toml"), Bindings: c.bindings})
			if err == nil {
				_, err = d.NewRuntime(t.Context(), pablo.HostOptions{LookupEnv: os.LookupEnv})
			}
			if err == nil {
				t.Fatal("loaded without the skills binding")
			}
			if strings.Contains(err.Error(), "--bind") {
				t.Errorf("library error speaks CLI: %v", err)
			}
			if !strings.Contains(err.Error(), `binding "`+c.binding+`"`) {
				t.Errorf("error does not name binding %q: %v", c.binding, err)
			}
			var ce *deployment.Error
			var pe *deployment.PathError
			if !(errors.As(err, &ce) && ce.Binding == c.binding) && !(errors.As(err, &pe) && pe.Unbound) {
				t.Errorf("error does not carry the binding as a field: %#v", err)
			}
		})
	}
}
