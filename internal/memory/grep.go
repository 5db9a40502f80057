package memory

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// Grep bounds.
const (
	// MaxPatternBytes bounds a grep pattern.
	MaxPatternBytes = 512
	// maxProgram bounds a compiled RE2 program's instructions, so that a
	// pattern's cost per byte stays small (RE2 is linear in the input).
	maxProgram = 4096
	// MaxGrepBytes bounds the document bytes one grep reads; past it the
	// page says Truncated.
	MaxGrepBytes = 64 << 20
	// maxLineText bounds the text of one match.
	maxLineText = 320
)

// GrepQuery is a literal or RE2 pattern over the docs paths.
type GrepQuery struct {
	Pattern    string `json:"pattern"`
	Regexp     bool   `json:"regexp,omitempty"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	// Paths narrows the search to these directory prefixes or files.
	Paths  []string `json:"paths,omitempty"`
	Cursor int      `json:"cursor,omitempty"`
	Limit  int      `json:"limit,omitempty"`
}

// Match is one matching line at a revision.
type Match struct {
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Text     string `json:"text"`
	Revision string `json:"revision"`
}

// GrepPage is one page of matches, in path and line order.
type GrepPage struct {
	Commit     string    `json:"commit"`
	Matches    []Match   `json:"matches"`
	NextCursor int       `json:"next_cursor,omitempty"`
	Truncated  bool      `json:"truncated,omitempty"`
	Skipped    []Problem `json:"skipped,omitempty"`
}

// compilePattern checks and compiles q's pattern.
func compilePattern(q GrepQuery) (*regexp.Regexp, []byte, error) {
	switch {
	case q.Pattern == "":
		return nil, nil, errorf(ErrInvalidArguments, CodeBadPattern, "", 0, "pattern is empty")
	case len(q.Pattern) > MaxPatternBytes:
		return nil, nil, errorf(ErrInvalidArguments, CodeBadPattern, "", 0, "pattern is %d bytes, over the %d-byte bound", len(q.Pattern), MaxPatternBytes)
	case !utf8.ValidString(q.Pattern):
		return nil, nil, errorf(ErrInvalidArguments, CodeBadPattern, "", 0, "pattern is not valid UTF-8")
	}
	if !q.Regexp && !q.IgnoreCase {
		return nil, []byte(q.Pattern), nil
	}
	src := q.Pattern
	if !q.Regexp {
		src = regexp.QuoteMeta(src)
	}
	if q.IgnoreCase {
		src = "(?i)" + src
	}
	parsed, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		e := errorf(ErrInvalidArguments, CodeBadPattern, "", 0, "not an RE2 pattern: %v", err)
		e.Err = err
		return nil, nil, e
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil || len(prog.Inst) > maxProgram {
		return nil, nil, errorf(ErrInvalidArguments, CodeBadPattern, "", 0, "pattern compiles to more than %d instructions; simplify its repetitions", maxProgram)
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, nil, errorf(ErrInvalidArguments, CodeBadPattern, "", 0, "not an RE2 pattern: %v", err)
	}
	return re, nil, nil
}

// Grep searches the docs of ix's commit that scope's paths allow. A docs
// file that is also a record outside scope is never read.
func (s *Store) Grep(ctx context.Context, ix *Index, q GrepQuery, scope Scope) (GrepPage, error) {
	cursor, limit, err := pageBounds(q.Cursor, q.Limit)
	if err != nil {
		return GrepPage{}, err
	}
	re, lit, err := compilePattern(q)
	if err != nil {
		return GrepPage{}, err
	}
	narrow := Scope{Paths: q.Paths}
	page := GrepPage{Commit: ix.pin.Commit, Matches: []Match{}}
	seen := 0
	read := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ix.docs {
		if err := ctx.Err(); err != nil {
			return GrepPage{}, err
		}
		if !scope.AllowsPath(d.Path) || (len(q.Paths) > 0 && !narrow.AllowsPath(d.Path)) {
			continue
		}
		if r, ok := ix.byPath[d.Path]; ok && !scope.allows(r) {
			continue
		}
		// A record under a docs path is grepped as scope sees it: its
		// edges to hidden records are not in its lines.
		b, err := s.textAs(ix, d, scope)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Kind == ErrLimitExceeded {
				page.Skipped = append(page.Skipped, Problem{d.Path, e.Code, e.Reason})
				continue
			}
			return GrepPage{}, err
		}
		read += len(b)
		if read > MaxGrepBytes {
			page.Truncated = true
			break
		}
		// A literal absent from the file is absent from its lines. A
		// pattern is matched line by line only: anchors mean line ends.
		if lit != nil && !bytes.Contains(b, lit) {
			continue
		}
		line := 0
		for len(b) > 0 {
			line++
			l := b
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				l, b = b[:i], b[i+1:]
			} else {
				b = nil
			}
			if lit != nil && !bytes.Contains(l, lit) || re != nil && !re.Match(l) {
				continue
			}
			if seen >= cursor+limit {
				page.NextCursor = seen
				return page, nil
			}
			if seen >= cursor {
				page.Matches = append(page.Matches, Match{Path: d.Path, Line: line, Text: clip(l), Revision: ix.pin.Commit})
			}
			seen++
		}
	}
	return page, nil
}

func clip(l []byte) string {
	l = bytes.TrimRight(l, "\r")
	if len(l) <= maxLineText {
		return string(l)
	}
	i := maxLineText
	for i > 0 && !utf8.RuneStart(l[i]) {
		i--
	}
	return string(l[:i]) + "…"
}
