// Package ceiling holds [Limit], the one type of every ceiling Pablo counts
// against: a deployment's options.limits, the ledger's per-agent ceilings
// and a model call's attested bounds.
//
// A Limit has three states: not set (the zero value), finite, or unlimited.
// Not set means "use the default", which is the reader's to say: the ledger
// gives a root's unset ceiling no bound and a child's its parent's; a
// deployment writes every default out before anything reads it. So
// Limit{} is never 0 nor unlimited by accident: [Max](0) allows nothing and
// [Unlimited] bounds nothing, on purpose.
//
// The ledger re-exports the type as ledger.Limit, with ledger.Max and
// ledger.Unlimited; this package exists so that the deployment language,
// which sits below the ledger, can name it too.
package ceiling

import (
	"errors"
	"strconv"
)

// Limit is one ceiling: not set, a finite uint64, or unlimited. See the
// package doc for what the zero value means.
//
// A Limit marshals as JSON: "unlimited", a canonical decimal string, or null
// when not set.
type Limit struct {
	n     uint64
	state state
}

type state uint8

const (
	unset state = iota
	finite
	unlimited
)

// Max returns the finite ceiling n; Max(0) allows nothing.
func Max(n uint64) Limit { return Limit{n: n, state: finite} }

// Unlimited returns the ceiling that bounds nothing.
func Unlimited() Limit { return Limit{state: unlimited} }

// IsSet reports whether l was set (finite or unlimited).
func (l Limit) IsSet() bool { return l.state != unset }

// Or returns l when it is set, or def when it is not: where a reader applies
// its default.
func (l Limit) Or(def Limit) Limit {
	if l.state == unset {
		return def
	}
	return l
}

// Value returns the ceiling and true when it is finite, or 0 and false when
// it is unlimited or not set.
func (l Limit) Value() (uint64, bool) { return l.n, l.state == finite }

// IsFinite reports whether l is a finite ceiling.
func (l Limit) IsFinite() bool { return l.state == finite }

// Allows reports whether a total of used+more stays within l, without
// overflow. Only a finite l refuses anything: resolve an unset Limit with
// [Limit.Or] before relying on it.
func (l Limit) Allows(used, more uint64) bool {
	if l.state != finite {
		return true
	}
	return used <= l.n && more <= l.n-used
}

// AtMost reports whether l is no larger than other (a finite ceiling is
// smaller than one that is unlimited or not set).
func (l Limit) AtMost(other Limit) bool {
	if other.state != finite {
		return true
	}
	return l.state == finite && l.n <= other.n
}

// Min returns the smaller of l and other.
func (l Limit) Min(other Limit) Limit {
	if l.AtMost(other) {
		return l
	}
	return other
}

// String returns "unlimited", the decimal ceiling, or "unset".
func (l Limit) String() string {
	switch l.state {
	case finite:
		return strconv.FormatUint(l.n, 10)
	case unlimited:
		return "unlimited"
	}
	return "unset"
}

// MarshalJSON writes "unlimited", the decimal ceiling as a string, or null
// when l is not set.
func (l Limit) MarshalJSON() ([]byte, error) {
	if l.state == unset {
		return []byte("null"), nil
	}
	return strconv.AppendQuote(nil, l.String()), nil
}

// UnmarshalJSON reads null (not set), "unlimited", a canonical decimal
// string, or a JSON integer (the deployment file's 32-bit counts).
func (l *Limit) UnmarshalJSON(b []byte) error {
	s := string(b)
	switch {
	case s == "null":
		*l = Limit{}
		return nil
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		v, err := Parse(s[1 : len(s)-1])
		if err != nil {
			return err
		}
		*l = v
		return nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return &SyntaxError{Text: s}
	}
	*l = Max(n)
	return nil
}

// ErrSyntax is what every [SyntaxError] matches.
var ErrSyntax = errors.New("ceiling: not a limit")

// SyntaxError reports text that is not a limit.
type SyntaxError struct {
	Text string
}

func (e *SyntaxError) Error() string {
	return strconv.Quote(e.Text) + " is neither \"unlimited\" nor a canonical decimal from 0 to 18446744073709551615"
}

// Is matches [ErrSyntax].
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// Parse parses "unlimited" or a canonical decimal uint64 (no sign, no
// leading zeros, no spaces), the grammar the reference uses for counters.
func Parse(s string) (Limit, error) {
	if s == "unlimited" {
		return Unlimited(), nil
	}
	n, ok := ParseCanonicalUint(s)
	if !ok {
		return Limit{}, &SyntaxError{Text: s}
	}
	return Max(n), nil
}

// ParseCanonicalUint parses a canonical decimal uint64: digits only, no
// leading zero unless the number is 0.
func ParseCanonicalUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
