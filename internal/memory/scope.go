package memory

import "strings"

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
