package memory

import (
	"slices"
	"strings"
)

// Scope is what one grant lets a caller see: record kinds and repository
// paths. An empty list allows nothing; "*" allows everything. A path entry
// is a directory prefix ("records/services/") or an exact file path. A
// record outside the scope is never returned, counted or named: to the
// caller it does not exist.
type Scope struct {
	Kinds []string `json:"kinds"`
	Paths []string `json:"paths"`
}

// All is the scope that allows every kind and path.
func All() Scope { return Scope{Kinds: []string{"*"}, Paths: []string{"*"}} }

// AllowsKind reports whether kind is in the scope.
func (s Scope) AllowsKind(kind string) bool {
	for _, k := range s.Kinds {
		if k == "*" || k == kind {
			return true
		}
	}
	return false
}

// AllowsPath reports whether repository path p is in the scope.
func (s Scope) AllowsPath(p string) bool {
	for _, a := range s.Paths {
		switch {
		case a == "*", a == p:
			return true
		case strings.HasSuffix(a, "/") && strings.HasPrefix(p, a):
			return true
		case !strings.HasSuffix(a, "/") && strings.HasPrefix(p, a+"/"):
			return true
		}
	}
	return false
}

// allows reports whether record r is in the scope.
func (s Scope) allows(r *Record) bool { return s.AllowsKind(r.Kind) && s.AllowsPath(r.Path) }

// Within returns the part of s that bound also allows: a kind both
// allow, a path both allow. It never allows more than s, so a child's
// grant cut down by its memory scope can only be smaller.
func (s Scope) Within(bound Scope) Scope {
	out := Scope{Kinds: []string{}, Paths: []string{}}
	for _, k := range s.Kinds {
		for _, b := range bound.Kinds {
			switch {
			case k == "*":
				out.Kinds = append(out.Kinds, b)
			case b == "*" || b == k:
				out.Kinds = append(out.Kinds, k)
			}
		}
	}
	for _, p := range s.Paths {
		for _, b := range bound.Paths {
			switch {
			case pathCovers(p, b):
				out.Paths = append(out.Paths, b)
			case pathCovers(b, p):
				out.Paths = append(out.Paths, p)
			}
		}
	}
	slices.Sort(out.Kinds)
	slices.Sort(out.Paths)
	out.Kinds, out.Paths = slices.Compact(out.Kinds), slices.Compact(out.Paths)
	return out
}

// pathCovers reports whether every path scope entry b allows, entry a
// allows too. Two entries either nest or share no path.
func pathCovers(a, b string) bool {
	switch {
	case a == "*":
		return true
	case b == "*":
		return false
	}
	bd := strings.TrimSuffix(b, "/")
	if ad, dir := strings.CutSuffix(a, "/"); dir {
		return strings.HasPrefix(bd, ad+"/") || (bd == ad && strings.HasSuffix(b, "/"))
	}
	return bd == a || strings.HasPrefix(bd, a+"/")
}
