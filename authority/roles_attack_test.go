package authority

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestNoSpellingOfARoleWidens defends the rule that a client or a child
// only narrows the roles it is given: no variant of a held role (case,
// look-alike letters, spaces, an empty name, repeats, a huge list) is
// ever held by what asks for it, through NarrowRoles (a session's ask),
// WithRoles on a bound Set (a task's) or Narrow (a child's).
func TestNoSpellingOfARoleWidens(t *testing.T) {
	t.Parallel()
	held := []string{"oncall"}
	huge := make([]string, 10000)
	for i := range huge {
		huge[i] = "oncall"
	}
	asks := map[string][]string{
		"uppercase":         {"ONCALL"},
		"title case":        {"Oncall"},
		"a Cyrillic o":      {"\u043encall"},
		"a fullwidth o":     {"\uff4fncall"},
		"a trailing space":  {"oncall "},
		"a trailing NUL":    {"oncall\x00"},
		"an empty name":     {""},
		"a wildcard":        {"*"},
		"another role":      {"admin"},
		"a repeat and more": {"oncall", "oncall", "admin"},
		"a huge list":       append(slices.Clone(huge), "admin"),
	}
	bound, err := rolesSet(t).WithRolesSet(held)
	if err != nil {
		t.Fatal(err)
	}
	unbound := rolesSet(t)
	for name, ask := range asks {
		t.Run(name, func(t *testing.T) {
			if got, err := NarrowRoles(held, ask); err == nil {
				t.Errorf("NarrowRoles(%q) = %q, want an error", held, shorten(got))
			}
			if s, err := bound.WithRolesSet(ask); err == nil {
				t.Errorf("a bound Set given %q holds %q", shorten(ask), s.Roles())
			}
			if s, err := bound.NarrowSet(Narrowing{Roles: ask}); err == nil || !errors.Is(err, ErrWiden) {
				t.Errorf("a child asking %q: err = %v, holds %q", shorten(ask), err, rolesOf(s))
			}
			// A task given no role has none for a child to keep.
			if s, err := unbound.NarrowSet(Narrowing{Roles: ask}); err == nil {
				t.Errorf("a child of a task given none asking %q holds %q", shorten(ask), s.Roles())
			}
		})
	}
	t.Run("repeats of a held role keep it once", func(t *testing.T) {
		s, err := bound.WithRolesSet(huge)
		if err != nil || !slices.Equal(s.Roles(), held) {
			t.Errorf("roles = %q, %v; want %q", s.Roles(), err, held)
		}
		c, err := bound.NarrowSet(Narrowing{Roles: huge})
		if err != nil || !slices.Equal(c.Roles(), held) {
			t.Errorf("a child's roles = %q, %v; want %q", rolesOf(c), err, held)
		}
	})
	t.Run("a child holding none cannot be given one", func(t *testing.T) {
		c, err := bound.NarrowSet(Narrowing{Roles: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := c.WithRolesSet(held); err == nil {
			t.Errorf("a child that kept no role was given %q", s.Roles())
		}
		if d := c.Decide(Request{Capability: ShellRun}); d.Allowed {
			t.Errorf("a child that kept no role may run shell.run: %+v", d)
		}
	})
}

func rolesOf(s *Set) []string {
	if s == nil {
		return nil
	}
	return s.Roles()
}

func shorten(rs []string) []string {
	if len(rs) > 4 {
		return append(slices.Clone(rs[:3]), "... "+strings.Repeat(".", 3))
	}
	return rs
}
