//go:build unix

package pablo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/config"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/fsx"
	"github.com/pabloagent/pablo/internal/script"
)

// notBlocked runs f under a context deadline and fails the test if f has
// not returned well after it: an open(2) of a FIFO with no writer never
// returns, whatever the context says. The deadline is long enough that a
// loaded host reaches the FIFO before it, so the answer is the FIFO's,
// not the deadline's.
func notBlocked(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	guard := time.NewTimer(60 * time.Second)
	defer guard.Stop()
	select {
	case err := <-done:
		return err
	case <-guard.C:
		t.Fatal("blocked on a FIFO past the context deadline")
		return nil
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
}

// TestHostNamedFilesThatAreFIFOsNeverBlock: every file the host opens by
// path (the entry --config, an import, an output schema, a script, a
// credential file) is opened without blocking and refused as not a regular
// file, with a typed error.
func TestHostNamedFilesThatAreFIFOsNeverBlock(t *testing.T) {
	t.Parallel()
	write := func(dir, name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	load := func(ctx context.Context, cfg, dir string) (*Deployment, error) {
		ws := filepath.Join(dir, "work")
		os.Mkdir(ws, 0o700)
		return LoadContext(ctx, LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": ws}})
	}
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, dir string) error
	}{
		{"config", func(ctx context.Context, dir string) error {
			p := filepath.Join(dir, "deployment.toml")
			mkfifo(t, p)
			_, err := load(ctx, p, dir)
			return err
		}},
		{"import", func(ctx context.Context, dir string) error {
			mkfifo(t, filepath.Join(dir, "base.toml"))
			_, err := load(ctx, write(dir, "deployment.toml", "schema_version = 1\nimports = [\"base.toml\"]\n"), dir)
			return err
		}},
		{"output schema", func(ctx context.Context, dir string) error {
			mkfifo(t, filepath.Join(dir, "schema.json"))
			_, err := load(ctx, write(dir, "deployment.toml", "schema_version = 1\n[options.output]\nschema = { base = \"config\", path = \"schema.json\" }\n"), dir)
			return err
		}},
		{"script", func(ctx context.Context, dir string) error {
			mkfifo(t, filepath.Join(dir, "script.json"))
			d, err := load(ctx, write(dir, "deployment.toml", "schema_version = 1\n[options.shell]\nenabled = false\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n"), dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := script.Load(ctx, filepath.Join(dir, "script.json")); !errors.Is(err, fsx.ErrNotRegular) {
				t.Errorf("script.Load: %v", err)
			}
			rt, err := d.NewRuntime(ctx, HostOptions{})
			if err == nil {
				rt.Close()
			}
			return err
		}},
		{"credential file", func(ctx context.Context, dir string) error {
			mkfifo(t, filepath.Join(dir, "key"))
			d, err := load(ctx, write(dir, "deployment.toml", `schema_version = 1
[credentials.key]
consumer = "provider.openrouter"
sources = [{ kind = "file", path = { base = "config", path = "key" }, encoding = "utf8" }]
[options.model]
provider = "openrouter"
id = "m"
credential = "key"
`), dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := d.Resolver(authority.ResolverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Resolve(ctx, "key", authority.ConsumerOpenRouter, config.OpenRouterEndpoint)
			if !errors.Is(err, authority.ErrCredential) {
				t.Errorf("not a credential error: %v", err)
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			err := notBlocked(t, func(ctx context.Context) error { return c.run(ctx, dir) })
			if !errors.Is(err, fsx.ErrNotRegular) {
				t.Fatalf("want fsx.ErrNotRegular, got %v", err)
			}
		})
	}
}

// TestLoadHonoursCancellation: a cancelled load reads nothing and says so.
func TestLoadHonoursCancellation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "deployment.toml")
	os.WriteFile(p, []byte("schema_version = 1\n"), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := LoadContext(ctx, LoadOptions{Config: p, Bindings: map[string]string{"workspace": dir}})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v", err)
	}
}
