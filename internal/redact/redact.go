// Package redact removes secrets from text before it is recorded anywhere:
// events, ledger, traces, errors, the model's own input.
//
// A Set masks two kinds of secret: known values (every credential a runtime
// resolves is added) and suspected secrets, found by detectors for
// well-known credential formats (AWS access keys, GitHub, GitLab, OpenAI,
// Anthropic, Slack and Stripe keys, Google API keys, JWTs, PEM private-key
// blocks, URLs with a password) plus the patterns a deployment names. Each
// masked region becomes Mask, and the functions that mask say how many
// regions they masked.
//
// Text is masked as it is decoded, never as it is encoded: MaskJSON masks
// the decoded value of every JSON string, so a secret holding a quote, a
// backslash or a TAB is found however it was escaped. Streamed text goes
// through a Stream, which holds back only a tail that could still be the
// start of a secret, so a secret split across chunks is masked whole.
package redact

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Mask replaces every redacted region.
const Mask = "[redacted]"

// minLen is the shortest value worth masking: masking one- or two-byte
// values would shred ordinary output without protecting anything.
const minLen = 4

// Set is a concurrency-safe set of secret values and detectors. The zero
// value masks the built-in detectors' matches and no value; it is ready to
// use. Reads take no lock: every change publishes a new immutable table.
type Set struct {
	mu       sync.Mutex // serializes changes
	values   []string
	patterns []*Pattern // a deployment's own, after the built-ins
	tab      atomic.Pointer[table]
}

// Add registers a secret value. Short values are ignored. A value that is
// an authorization scheme and a token ("Bearer abc…", "Basic …") registers
// the token on its own too: a server that echoes the token alone must not
// get it past the mask.
func (s *Set) Add(v string) {
	parts := Parts(v)
	if len(parts) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, p := range parts {
		if !slices.Contains(s.values, p) {
			s.values = append(s.values, p)
			changed = true
		}
	}
	if changed {
		s.publish()
	}
}

// AddPatterns registers suspected-secret detectors beyond the built-ins.
func (s *Set) AddPatterns(ps ...*Pattern) {
	if len(ps) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patterns = append(s.patterns, ps...)
	s.publish()
}

// publish builds the table of the current values and patterns; s.mu must
// be held.
func (s *Set) publish() {
	masked := slices.Clip(s.values)
	for _, v := range s.values {
		for _, e := range Encoded(v) {
			if !slices.Contains(masked, e) {
				masked = append(masked, e)
			}
		}
	}
	t := newTable(masked, append(slices.Clip(builtins()), s.patterns...))
	t.known = len(s.values)
	s.tab.Store(t)
}

// minEncoded is the shortest encoded core worth masking: shorter runs of
// base64 occur by chance in ordinary text.
const minEncoded = 8

// Encoded returns the runs of base64 (standard and URL alphabets) that
// every encoding of v holds, at each of the three alignments v can have
// inside a longer encoded text ("user:"+v in a Basic credential, say):
// the characters that depend on v's bytes alone. A secret that a server
// or a model re-encodes is masked too; at most a character or two of
// either end stays.
func Encoded(v string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := 0; k < 3; k++ {
			buf := append(make([]byte, k, k+len(v)), v...)
			s := enc.EncodeToString(buf)
			start, end := 0, len(buf)/3*4
			if k > 0 {
				start = 4 // the first group mixes in what came before
			}
			if end-start >= minEncoded && !slices.Contains(out, s[start:end]) {
				out = append(out, s[start:end])
			}
		}
	}
	return out
}

// Parts returns what masking v means masking: v itself and, when v is an
// authorization scheme and a token, the token alone. Values too short to
// mask are left out.
func Parts(v string) []string {
	var out []string
	if scheme, token, ok := strings.Cut(v, " "); ok && isScheme(scheme) && !strings.ContainsAny(token, " \t") && len(token) >= minLen {
		out = append(out, token)
	}
	if len(v) >= minLen {
		out = append(out, v)
	}
	return out
}

// isScheme reports whether w looks like an HTTP authorization scheme.
func isScheme(w string) bool {
	if len(w) == 0 || len(w) > 20 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Len reports how many values are registered.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.table().known
}

// table is the current table: the built-ins alone until something is added.
func (s *Set) table() *table {
	if s == nil {
		return builtinTable()
	}
	if t := s.tab.Load(); t != nil {
		return t
	}
	return builtinTable()
}

var builtinTable = sync.OnceValue(func() *table { return newTable(nil, builtins()) })

// Bytes returns b with every secret masked. It returns b itself when
// nothing matched, so the common case allocates nothing.
func (s *Set) Bytes(b []byte) []byte {
	out, _ := s.Mask(b)
	return out
}

// String is Bytes for strings.
func (s *Set) String(str string) string {
	out, _ := s.MaskString(str)
	return out
}

// Mask returns b with every secret masked and the number of masked
// regions; b itself when there were none.
func (s *Set) Mask(b []byte) ([]byte, int) {
	return s.table().mask(b)
}

func (t *table) mask(b []byte) ([]byte, int) {
	r := scan(t, b, 0, -1, false)
	if !r.any(t) {
		return b, 0
	}
	spans := t.matches(b, 0, r, nil)
	if len(spans) == 0 {
		return b, 0
	}
	return apply(nil, b, spans)
}

// MaskString is Mask for strings.
func (s *Set) MaskString(str string) (string, int) {
	t := s.table()
	r := scan(t, str, 0, -1, false)
	if !r.any(t) {
		return str, 0
	}
	b := []byte(str)
	spans := t.matches(b, 0, r, nil)
	if len(spans) == 0 {
		return str, 0
	}
	out, n := apply(nil, b, spans)
	return string(out), n
}

// span is a region of text: [s, e) to mask; [ms, me) is the whole match,
// which a Stream never cuts.
type span struct{ s, e, ms, me int }

// apply appends b to out with every span masked, overlapping spans masked
// once, and returns the number of masked regions.
func apply(out, b []byte, spans []span) ([]byte, int) {
	slices.SortFunc(spans, func(x, y span) int { return x.s - y.s })
	n, last := 0, 0
	for i := 0; i < len(spans); {
		s, e := spans[i].s, spans[i].e
		for i++; i < len(spans) && spans[i].s < e; i++ {
			e = max(e, spans[i].e)
		}
		out = append(out, b[last:s]...)
		out = append(out, Mask...)
		last = e
		n++
	}
	return append(out, b[last:]...), n
}

// table is an immutable index of what a Set masks: every literal a match
// can start with (a known value is its own literal), indexed by its first
// byte.
type table struct {
	known  int // values registered with Add; the rest are their encodings
	values []string
	pats   []*Pattern
	lits   []lit
	first  [256][]uint16 // byte → indexes into lits
	// kind says what starts with a byte (nothing, only literals that must
	// follow a non-word byte, or anything) and whether \b counts it a word
	// byte: a scan passes over most bytes with one table read.
	kind [256]uint8
	// second says, for a first byte, which second bytes some literal has
	// (a bit set of 256); oneByte marks first bytes of one-byte literals.
	// A scan tries the literals at a position only when the next byte can
	// follow, so ordinary text skips nearly every candidate in one read.
	second  [256][4]uint64
	oneByte [256]bool
	// quiet marks the word bytes that start no literal after a word byte:
	// inside a word a scan skips a run of them in a tight loop.
	quiet [256]bool
	loose []int // patterns with no literal prefix: tried on every text
}

// lit is a literal: a known value (pat < 0) or a pattern's prefix.
type lit struct {
	s         string
	pat       int
	wordStart bool
}

func newTable(values []string, pats []*Pattern) *table {
	t := &table{values: slices.Clone(values), pats: pats}
	for c := range t.kind {
		if isWord(byte(c)) {
			t.kind[c] = isWordByte
		}
	}
	add := func(s string, pat int, wordStart bool) {
		c := s[0]
		if len(s) == 1 {
			t.oneByte[c] = true
		} else {
			t.second[c][s[1]>>6] |= 1 << (s[1] & 63)
		}
		t.first[c] = append(t.first[c], uint16(len(t.lits)))
		t.lits = append(t.lits, lit{s: s, pat: pat, wordStart: wordStart})
		switch {
		case !wordStart:
			t.kind[c] |= startsAny
		case t.kind[c]&startsAny == 0:
			t.kind[c] |= startsAfterNonWord
		}
	}
	defer func() {
		for c := range t.quiet {
			t.quiet[c] = t.kind[c]&isWordByte != 0 && t.kind[c]&startsAny != startsAny
		}
	}()
	for _, v := range t.values {
		add(v, -1, false)
	}
	for i, p := range pats {
		if len(p.prefixes) == 0 {
			t.loose = append(t.loose, i)
			continue
		}
		for _, pre := range p.prefixes {
			add(pre, i, p.wordStart)
		}
	}
	return t
}

// The bits of table.kind.
const (
	startsAfterNonWord = 1 // literals that must follow a non-word byte
	startsAny          = 3 // any literal (both bits)
	isWordByte         = 4
)

// scanned is what one pass over a text found: the known values it holds,
// the patterns whose prefix occurs (their expressions must run), and for a
// stream the earliest offset from which the text could still be the start
// of a secret.
type scanned struct {
	values  []span
	present []bool // by pattern index; nil when none
	hold    int
}

func (r *scanned) any(t *table) bool {
	return len(r.values) > 0 || r.present != nil || len(t.loose) > 0
}

// scan looks at text[from:] (text[:from] is context already released;
// prev is the byte before text when there is none, or -1). With stream set
// it also computes hold.
func scan[T string | []byte](t *table, text T, from int, prev int, stream bool) scanned {
	r := scanned{hold: len(text)}
	kind := &t.kind
	wordBefore := prev >= 0 && kind[prev]&isWordByte != 0
	if from > 0 {
		wordBefore = kind[text[from-1]]&isWordByte != 0
	}
	for i := from; i < len(text); i++ {
		if wordBefore && t.quiet[text[i]] {
			// Inside a word only a literal that needs no boundary can
			// start: skip to the first byte that is not quiet.
			for i++; i < len(text) && t.quiet[text[i]]; i++ {
			}
			if i == len(text) {
				break
			}
		}
		k := kind[text[i]]
		afterWord := wordBefore
		wordBefore = k&isWordByte != 0
		if k&startsAny == 0 || k&startsAny == startsAfterNonWord && afterWord {
			continue
		}
		if i+1 < len(text) && !t.oneByte[text[i]] {
			// No literal from here can match, nor be a prefix held back:
			// both need its second byte.
			if c2 := text[i+1]; t.second[text[i]][c2>>6]&(1<<(c2&63)) == 0 {
				continue
			}
		}
		rest := text[i:]
		for _, li := range t.first[text[i]] {
			l := &t.lits[li]
			if l.wordStart && afterWord {
				continue
			}
			var p *Pattern
			if l.pat >= 0 {
				p = t.pats[l.pat]
			}
			if len(rest) < len(l.s) {
				if stream && string(rest) == l.s[:len(rest)] {
					r.hold = min(r.hold, i)
				}
				continue
			}
			if string(rest[:len(l.s)]) != l.s {
				continue
			}
			if p == nil {
				r.values = append(r.values, span{i, i + len(l.s), i, i + len(l.s)})
				continue
			}
			if r.present == nil {
				r.present = make([]bool, len(t.pats))
			}
			r.present[l.pat] = true
			if stream && i < r.hold && len(text)-i <= p.max {
				// A match from i may still be in progress when every byte
				// after the prefix can be part of one.
				j := i + len(l.s)
				if p.end != nil {
					// A block is in progress until its end marker.
					if !p.endIn(text[j:]) {
						r.hold = i
					}
					continue
				}
				for j < len(text) && p.alpha[text[j]] {
					j++
				}
				if j == len(text) {
					r.hold = i
				}
			}
		}
	}
	if stream {
		for _, pi := range t.loose {
			p := t.pats[pi]
			j := len(text)
			for j > from && len(text)-j < p.max && p.alpha[text[j-1]] {
				j--
			}
			r.hold = min(r.hold, j)
		}
	}
	return r
}

// endIn reports whether text holds p's end marker.
func (p *Pattern) endIn(text any) bool {
	switch t := text.(type) {
	case string:
		return p.end.MatchString(t)
	case []byte:
		return p.end.Match(t)
	}
	return false
}

// extent is where a match of p at [ms, me) in b ends once continued over
// its body or to its end marker.
func (p *Pattern) extent(b []byte, ms, me int) int {
	if p.body == nil {
		return me
	}
	limit := min(len(b), ms+p.max)
	if p.end != nil {
		if loc := p.end.FindIndex(b[me:limit]); loc != nil {
			return me + loc[1]
		}
		return limit
	}
	for me < limit && p.body[b[me]] {
		me++
	}
	return me
}

// matches returns the spans to mask in b[from:]: the known values scan
// found and every match of the patterns it marked present or that have no
// prefix. Matches starting in the context b[:from] are not b's.
func (t *table) matches(b []byte, from int, r scanned, out []span) []span {
	out = append(out, r.values...)
	run := func(p *Pattern) {
		for _, m := range p.re.FindAllSubmatchIndex(b, -1) {
			if m[0] < from {
				continue
			}
			me := p.extent(b, m[0], m[1])
			if p.needs != "" && !bytes.Contains(b[m[0]:me], []byte(p.needs)) {
				continue
			}
			s, e := m[0], me
			if p.group > 0 && m[2*p.group] >= 0 {
				s, e = m[2*p.group], m[2*p.group+1]
			}
			if e > s {
				out = append(out, span{s, e, m[0], me})
			}
		}
	}
	for i, on := range r.present {
		if on {
			run(t.pats[i])
		}
	}
	for _, i := range t.loose {
		run(t.pats[i])
	}
	return out
}
