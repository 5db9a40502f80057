package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
)

// secret is placed outside the workspace by confinement tests; it must never
// appear in any result or error.
const secret = "OUTSIDE-SECRET-7f3a"

type fixture struct {
	t       *testing.T
	outside string // a directory beside the workspace
	dir     string // the workspace directory
	ws      *Workspace
	tools   *Tools
}

// allowAll authorizes every path.
func allowAll(authority.ResourceKind, string) authority.Decision {
	return authority.Decision{Allowed: true, Layer: "test", RuleID: "test.allow"}
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, outside: filepath.Join(base, "outside"), dir: filepath.Join(base, "ws")}
	for _, d := range []string{f.outside, f.dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	f.ws = ws
	opts.Workspace = ws
	if opts.Decide == nil {
		opts.Decide = allowAll
	}
	tools, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.tools = tools
	return f
}

func (f *fixture) path(rel string) string { return filepath.Join(f.dir, filepath.FromSlash(rel)) }

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := f.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(f.path(rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) symlink(target, rel string) {
	f.t.Helper()
	if err := os.Symlink(target, f.path(rel)); err != nil {
		f.t.Fatal(err)
	}
}

// noSecret fails when the outside file's bytes leak into v's JSON or err's
// message.
func noSecret(t *testing.T, v any, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Fatalf("secret leaked in error: %v", err)
	}
	if v != nil {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), secret) {
			t.Fatalf("secret leaked in result: %s", b)
		}
	}
}

func bg() context.Context { return context.Background() }

func ptr[T any](v T) *T { return &v }

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	if !errors.Is(err, code) || !errors.Is(err, ErrRecoverable) {
		t.Fatalf("errors.Is(%v, %s / ErrRecoverable) = false", err, code)
	}
}

func wantDenied(t *testing.T, err error, rule string) {
	t.Helper()
	var d *DeniedError
	if !errors.As(err, &d) || d.Decision.RuleID != rule || d.Decision.Allowed {
		t.Fatalf("err = %v, want denial by rule %s", err, rule)
	}
	if !errors.Is(err, authority.ErrDenied) {
		t.Fatalf("errors.Is(%v, authority.ErrDenied) = false", err)
	}
	var ad *authority.DeniedError
	if !errors.As(err, &ad) || ad.Decision.RuleID != rule {
		t.Fatalf("errors.As(%v, *authority.DeniedError) failed", err)
	}
}

func wantLimit(t *testing.T, err error, kind LimitKind) {
	t.Helper()
	var l *LimitError
	if !errors.As(err, &l) || l.Kind != kind {
		t.Fatalf("err = %v, want limit %s", err, kind)
	}
	if !errors.Is(err, kind) || !errors.Is(err, ErrLimit) {
		t.Fatalf("errors.Is(%v, %s / ErrLimit) = false", err, kind)
	}
}

func wantInvalid(t *testing.T, err error) {
	t.Helper()
	var a *ArgumentError
	if !errors.As(err, &a) || !errors.Is(err, ErrInvalidArguments) {
		t.Fatalf("err = %v, want invalid arguments", err)
	}
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }

func contextDeadlineExceeded() error { return context.DeadlineExceeded }

func utf8ValidString(s string) bool { return utf8.ValidString(s) }
