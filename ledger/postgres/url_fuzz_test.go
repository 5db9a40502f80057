package postgres_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/postgres"
)

// fixedReasons are every message CheckURL gives, one input of each class:
// a message never depends on the URL, so it cannot repeat any of it.
var fixedReasons = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range []string{
		"postgres://" + strings.Repeat("h", 4096), "x", "postgres://h/\x00", "postgres://%zz",
		"postgres://u:p@h", "postgres:opaque", "postgres://h/d?a=%zz", "postgres://h/d?password=p",
	} {
		m[postgres.CheckURL(s).Error()] = true
	}
	return m
}()

// FuzzCheckURL: the admission of a store URL never panics, refuses every
// URL that carries a password, and its error never repeats the URL or the
// password.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"postgres://host/db", "postgresql://u@h:5432/d?sslmode=disable", "postgres:///db?host=/run/postgresql",
		"postgres://u:pw@h/d", "postgres://u@h/d?password=pw", "postgres://%zz@h", "host=/tmp dbname=x", "",
		"POSTGRES://u:p%40ss@h/d", "postgres://u@h/d?a=1&Password=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := postgres.CheckURL(s)
		if err == nil {
			if u, perr := url.Parse(s); perr != nil {
				t.Fatalf("admitted %q, which does not parse", s)
			} else if _, ok := u.User.Password(); ok {
				t.Fatalf("admitted %q, which carries a password", s)
			} else {
				for k := range u.Query() {
					if strings.EqualFold(k, "password") {
						t.Fatalf("admitted %q, which carries a password option", s)
					}
				}
			}
			return
		}
		if !errors.Is(err, postgres.ErrURL) {
			t.Fatalf("CheckURL(%q) = %v, not ErrURL", s, err)
		}
		msg := err.Error()
		if !fixedReasons[msg] {
			t.Fatalf("CheckURL(%q) = %v: a message that depends on the URL", s, err)
		}
		if u, perr := url.Parse(s); perr == nil {
			if p, ok := u.User.Password(); ok && postgres.IsURL(s) {
				if !errors.Is(err, postgres.ErrPasswordInURL) {
					t.Fatalf("CheckURL(%q) = %v, not ErrPasswordInURL", s, err)
				}
				if len(p) >= 4 && strings.Contains(msg, p) {
					t.Fatalf("the error repeats the password: %v", err)
				}
			}
		}
	})
}
