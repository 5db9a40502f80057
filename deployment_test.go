package pablo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/internal/config"
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

func wantCode(t *testing.T, err error, code config.Code, option string) *deployment.Error {
	t.Helper()
	var ce *deployment.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want %s, got %v", code, err)
	}
	if ce.Code != code {
		t.Fatalf("want %s, got %s (%v)", code, ce.Code, ce)
	}
	if option != "" && ce.Option != option {
		t.Fatalf("want option %s, got %s (%v)", option, ce.Option, ce)
	}
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("errors.Is(err, ErrConfig) is false")
	}
	return ce
}
