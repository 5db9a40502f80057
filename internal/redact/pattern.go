package redact

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxPatternBytes bounds the text one pattern can match. A streaming masker
// holds back at most this much of a stream while a match may still be in
// progress, so it is also the longest delay a pattern adds to live output.
// It is sized for a PEM private-key block (a 4096-bit RSA key is about
// 3.3 KiB).
const MaxPatternBytes = 8 << 10

// MaxExprBytes bounds the source text of one pattern.
const MaxExprBytes = 1024

// ErrInvalidPattern is the sentinel kind of every PatternError.
var ErrInvalidPattern = errors.New("redact: invalid pattern")

// PatternError explains why a suspected-secret pattern was refused.
type PatternError struct {
	// Expr is the pattern's source text (shortened).
	Expr string
	// Reason says what to change.
	Reason string
	// Err is the compiler's error, if any.
	Err error
}

func (e *PatternError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("pattern %q: %s: %v", e.Expr, e.Reason, e.Err)
	}
	return fmt.Sprintf("pattern %q: %s", e.Expr, e.Reason)
}

// Unwrap returns the cause.
func (e *PatternError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidPattern) true.
func (e *PatternError) Is(target error) bool { return target == ErrInvalidPattern }

// Pattern is a compiled suspected-secret detector: a Go RE2 regular
// expression whose matches are masked like known values. Its analysis lets
// a Stream decide cheaply whether a chunk could start a match: the literal
// prefixes every match begins with, the bytes a match can hold and the
// longest match.
type Pattern struct {
	name      string
	expr      string
	re        *regexp.Regexp
	group     int      // the submatch to mask; 0 for the whole match
	prefixes  []string // every match starts with one; none: any start
	wordStart bool     // every match starts at a word boundary before a word byte
	alpha     [256]bool
	max       int
	// A built-in detector of a long token matches its start and then
	// continues over the bytes of body (up to max bytes in all), or, with
	// end set, to the end of the first match of end within max bytes (the
	// whole rest of the bound when there is none).
	body  *[256]bool
	end   *regexp.Regexp
	needs string
}

// Name is the pattern's name (a built-in detector's, or "options.redaction.patterns/N").
func (p *Pattern) Name() string { return p.name }

// NewPattern compiles a suspected-secret pattern. It must compile with Go's
// RE2 syntax, be at most MaxExprBytes long, match no empty text and match
// at most MaxPatternBytes bytes (no unbounded repetition: write {1,64},
// not +).
func NewPattern(name, expr string) (*Pattern, error) {
	return newPattern(name, expr, 0)
}

func newPattern(name, expr string, group int) (*Pattern, error) {
	short := expr
	if len(short) > 80 {
		short = short[:80] + "…"
	}
	if len(expr) > MaxExprBytes {
		return nil, &PatternError{Expr: short, Reason: fmt.Sprintf("longer than %d bytes", MaxExprBytes)}
	}
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, &PatternError{Expr: short, Reason: "not a Go RE2 regular expression", Err: err}
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, &PatternError{Expr: short, Reason: "not a Go RE2 regular expression", Err: err}
	}
	if shortest(tree) == 0 {
		return nil, &PatternError{Expr: short, Reason: "it matches the empty text; every match must hold at least one byte"}
	}
	n, bounded := maxLen(tree)
	if !bounded || n > MaxPatternBytes {
		return nil, &PatternError{Expr: short, Reason: fmt.Sprintf("a match may be longer than %d bytes; bound every repetition (write {1,64}, not + or *)", MaxPatternBytes)}
	}
	p := &Pattern{name: name, expr: expr, re: re, group: group, max: n}
	alphabet(tree, &p.alpha)
	set, _ := prefixSet(tree)
	p.prefixes = set
	for _, s := range set {
		if s == "" {
			p.prefixes = nil
			break
		}
	}
	p.wordStart = startsWithWordBoundary(tree) && len(p.prefixes) > 0
	for _, s := range p.prefixes {
		if !isWord(s[0]) {
			p.wordStart = false
		}
	}
	return p, nil
}

// maxLen is the most bytes re can match, and whether that is bounded.
func maxLen(re *syntax.Regexp) (int, bool) {
	const huge = 1 << 30
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && r >= utf8.RuneSelf {
				n += utf8.UTFMax
			} else {
				n += utf8.RuneLen(r)
			}
		}
		return n, true
	case syntax.OpCharClass:
		n := 1
		for i := 1; i < len(re.Rune); i += 2 {
			n = max(n, utf8.RuneLen(min(re.Rune[i], unicode.MaxRune)))
		}
		return n, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return 0, false
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxLen(re.Sub[0])
		if !ok || n*re.Max > huge {
			return 0, false
		}
		return n * re.Max, true
	case syntax.OpConcat:
		sum := 0
		for _, sub := range re.Sub {
			n, ok := maxLen(sub)
			if !ok || sum+n > huge {
				return 0, false
			}
			sum += n
		}
		return sum, true
	case syntax.OpAlternate:
		most := 0
		for _, sub := range re.Sub {
			n, ok := maxLen(sub)
			if !ok {
				return 0, false
			}
			most = max(most, n)
		}
		return most, true
	}
	return 0, true // empty-width assertions, empty match, no match
}

// shortest is the fewest bytes re can match.
func shortest(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return shortest(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * shortest(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += shortest(sub)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, sub := range re.Sub {
			if m := shortest(sub); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // star, quest, empty-width assertions, empty match
}

// alphabet marks every byte a match of re can hold.
func alphabet(re *syntax.Regexp, a *[256]bool) {
	mark := func(lo, hi rune) {
		for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
			a[r] = true
		}
		if hi >= utf8.RuneSelf {
			for b := 0x80; b < 0x100; b++ {
				a[b] = true
			}
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			mark(r, r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					mark(f, f)
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			mark(re.Rune[i], re.Rune[i+1])
		}
	case syntax.OpAnyChar:
		mark(0, unicode.MaxRune)
	case syntax.OpAnyCharNotNL:
		mark(0, '\n'-1)
		mark('\n'+1, unicode.MaxRune)
	default:
		for _, sub := range re.Sub {
			alphabet(sub, a)
		}
	}
}

// maxPrefixes bounds the literal prefixes one pattern is indexed under.
const maxPrefixes = 16

// prefixSet returns literal strings one of which starts every match of re,
// and whether every match is exactly one of them. A set holding "" means
// no literal start is known.
func prefixSet(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return []string{""}, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > maxPrefixes || re.Rune[i+1] >= utf8.RuneSelf {
				return []string{""}, false
			}
		}
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, string(r))
			}
		}
		return out, true
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpCapture:
		return prefixSet(re.Sub[0])
	case syntax.OpConcat:
		acc := []string{""}
		for _, sub := range re.Sub {
			set, complete := prefixSet(sub)
			if len(acc)*len(set) > maxPrefixes {
				return acc, false
			}
			var next []string
			for _, a := range acc {
				for _, s := range set {
					next = append(next, a+s)
				}
			}
			acc = next
			if !complete {
				return acc, false
			}
		}
		return acc, true
	case syntax.OpAlternate:
		var out []string
		complete := true
		for _, sub := range re.Sub {
			set, c := prefixSet(sub)
			out = append(out, set...)
			complete = complete && c
		}
		if len(out) > maxPrefixes {
			return []string{""}, false
		}
		return out, complete
	}
	return []string{""}, false
}

// startsWithWordBoundary reports whether re begins with \b.
func startsWithWordBoundary(re *syntax.Regexp) bool {
	for {
		switch re.Op {
		case syntax.OpWordBoundary:
			return true
		case syntax.OpConcat:
			if len(re.Sub) == 0 {
				return false
			}
			re = re.Sub[0]
		case syntax.OpCapture:
			re = re.Sub[0]
		default:
			return false
		}
	}
}

func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// builtinSpecs are the well-known credential formats every Set masks.
// Each has a literal prefix; a long token's expression matches only its
// shortest form and the match continues over its body bytes (up to
// MaxPatternBytes), which keeps the compiled expressions small.
var builtinSpecs = [...]struct {
	name, expr string
	group      int
	body, end  string
	needs      string // a match whose extent lacks it is none
}{
	{"aws_access_key_id", `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`, 0, "", "", ""},
	{"github_token", `\bgh[oprsu]_[A-Za-z0-9]{36}`, 0, `[A-Za-z0-9]`, "", ""},
	{"github_pat", `\bgithub_pat_[A-Za-z0-9_]{22}`, 0, `[A-Za-z0-9_]`, "", ""},
	{"gitlab_token", `\bglpat-[A-Za-z0-9_-]{20}`, 0, `[A-Za-z0-9_-]`, "", ""},
	{"anthropic_key", `\bsk-ant-[A-Za-z0-9_-]{20}`, 0, `[A-Za-z0-9_-]`, "", ""},
	{"openai_key", `\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20}|[A-Za-z0-9]{20})`, 0, `[A-Za-z0-9_-]`, "", ""},
	{"slack_token", `\bxox[abeoprs]-[A-Za-z0-9-]{10}`, 0, `[A-Za-z0-9-]`, "", ""},
	{"stripe_key", `\b[rs]k_(?:live|test)_[A-Za-z0-9]{16}`, 0, `[A-Za-z0-9]`, "", ""},
	{"google_api_key", `\bAIza[0-9A-Za-z_-]{35}`, 0, "", "", ""},
	{"jwt", `\beyJ[A-Za-z0-9_-]{8}`, 0, `[A-Za-z0-9_.-]`, "", ".eyJ"},
	{"pem_private_key", `-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----`, 0, `[A-Za-z0-9+/=\s:,.()-]`, `-----END[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----`, ""},
	{"url_userinfo", `://([A-Za-z0-9._~%!$&*+,;=-]{1,64}:[A-Za-z0-9._~%!$&*+,;=:-]{1,64})@`, 1, "", "", ""},
}

// builtins compiles the built-in detectors once per process; they are
// immutable after.
var builtins = sync.OnceValue(func() []*Pattern {
	out := make([]*Pattern, len(builtinSpecs))
	for i, s := range builtinSpecs {
		p, err := newPattern(s.name, s.expr, s.group)
		if err != nil {
			panic(err) // a fault of this file, caught by its tests
		}
		if s.body != "" {
			tree, err := syntax.Parse(s.body, syntax.Perl)
			if err != nil {
				panic(err)
			}
			p.body = new([256]bool)
			alphabet(tree, p.body)
			alphabet(tree, &p.alpha)
			p.max = MaxPatternBytes
		}
		p.needs = s.needs
		if s.end != "" {
			p.end = regexp.MustCompile(s.end)
			tree, _ := syntax.Parse(s.end, syntax.Perl)
			alphabet(tree, &p.alpha)
		}
		out[i] = p
	}
	return out
})

// BuiltinNames lists the built-in detectors, in the order they are tried.
func BuiltinNames() []string {
	out := make([]string, len(builtinSpecs))
	for i, s := range builtinSpecs {
		out[i] = s.name
	}
	return out
}
