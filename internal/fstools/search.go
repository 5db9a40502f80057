package fstools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
)

// Match is one matching line.
type Match struct {
	// Path is the workspace-relative file path.
	Path string `json:"path"`
	// Line is 1-based.
	Line int64 `json:"line"`
	// Text is the line without its LF and one CR before it, cut to
	// MaxMatchTextBytes.
	Text string `json:"text"`
	// TextTruncated is set when Text was cut (an addition to the
	// reference's payload, which has no bound on line length).
	TextTruncated bool `json:"text_truncated,omitempty"`
}

// SearchResult is fs.search's payload.
type SearchResult struct {
	Path    string  `json:"path"`
	Matches []Match `json:"matches"`
	// Truncated is set when more than max_matches lines matched; there is
	// no continuation.
	Truncated bool `json:"truncated"`
	// Masked counts the secrets Options.MaskPage masked in cut lines.
	Masked int `json:"-"`
}

// Search runs fs.search: a recursive, depth-first, sorted walk under a
// directory reporting every line that contains the literal query. Files are
// streamed through a fixed buffer. Binary files (a NUL byte or invalid UTF-8
// anywhere), symlinks, special files, entries with non-UTF-8 names and
// subtrees the agent may not read are skipped silently; skipped entries still
// count toward MaxEntries. A file the agent was handed ([Pin]) is read whole
// and searched only when its bytes are the handed revision; otherwise the
// search fails with artifact_changed. A file larger than MaxFileBytes, or more bytes than
// MaxScanBytes, or entries deeper than MaxDepth, is a hard limit.
func (t *Tools) Search(ctx context.Context, a SearchArgs) (*SearchResult, error) {
	c := t.begin(ctx, authority.FSSearch)
	if err := c.alive(); err != nil {
		return nil, err
	}
	if err := checkQuery(c.id, a.Query); err != nil {
		return nil, err
	}
	if a.MaxMatches < 0 {
		return nil, &ArgumentError{Tool: c.id, Field: "max_matches", Reason: "must be positive"}
	}
	maxMatches := a.MaxMatches
	if maxMatches == 0 {
		maxMatches = DefaultMaxMatches
	}
	rel, parts, err := c.check(a.Path, authority.ResourceRead)
	if err != nil {
		return nil, err
	}
	dir, err := c.openDir(rel, parts)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	s := &search{c: c, max: maxMatches, sc: newLineScanner([]byte(a.Query), searchChunk, MaxMatchTextBytes)}
	s.matches = make([]Match, 0, min(maxMatches+1, 64))
	if err := s.walk(dir, rel, 1); err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	res := &SearchResult{Path: rel, Matches: s.matches, Masked: s.masked}
	if int64(len(s.matches)) > maxMatches {
		res.Matches, res.Truncated = s.matches[:maxMatches], true
	}
	return res, nil
}

func checkQuery(id authority.ID, q string) error {
	bad := func(reason string) error { return &ArgumentError{Tool: id, Field: "query", Reason: reason} }
	switch {
	case q == "":
		return bad("must not be empty")
	case len(q) > MaxQueryBytes:
		return bad("must be at most 4096 bytes")
	case strings.ContainsAny(q, "\n\r\x00"):
		return bad("must not contain LF, CR or NUL; search for one line's text")
	case !utf8.ValidString(q):
		return bad("must be valid UTF-8")
	}
	return nil
}

// errEnough stops the walk once max_matches+1 matches are in hand.
var errEnough = errors.New("fstools: enough matches")

type search struct {
	c       *call
	max     int64
	sc      *lineScanner
	matches []Match
	entries int64 // entries visited, for MaxEntries
	scanned int64 // file bytes read, for MaxScanBytes
	masked  int   // secrets masked in cut lines
}

func (s *search) walk(dir *os.Root, rel string, depth int64) error {
	c := s.c
	ents, err := c.readDir(dir, rel, s.entries, true)
	if err != nil {
		return err
	}
	s.entries += int64(len(ents))
	if max := c.t.limits.MaxDepth; max > 0 && depth > max && len(ents) > 0 {
		return c.limit("limits.filesystem.max_depth", max)
	}
	for _, e := range ents {
		if err := c.alive(); err != nil {
			return err
		}
		if e.name == "" { // a name that is not UTF-8, counted but skipped
			continue
		}
		p := join(rel, e.name)
		switch e.typ {
		case TypeDirectory:
			if !c.t.decide(authority.ResourceRead, p).Allowed {
				continue
			}
			sub, err := c.openSubdir(dir, p, e.name)
			if err != nil {
				if skippable(err) {
					continue
				}
				return err
			}
			err = s.walk(sub, p, depth+1)
			sub.Close()
			if err != nil {
				return err
			}
		case TypeFile:
			if !c.t.decide(authority.ResourceRead, p).Allowed {
				continue
			}
			if err := s.file(dir, p, e.name); err != nil {
				if skippable(err) {
					continue
				}
				return err
			}
			if int64(len(s.matches)) > s.max {
				return errEnough
			}
		}
	}
	return nil
}

// skippable reports an entry that vanished or turned into a symlink or a
// special file between listing and use: search skips it as it would have.
func skippable(err error) bool {
	return errors.Is(err, NotFound) || errors.Is(err, NotFile) || errors.Is(err, NotDirectory) ||
		errors.Is(err, authority.ErrDenied)
}

func (s *search) file(dir *os.Root, p, name string) error {
	c := s.c
	fi, err := dir.Lstat(name)
	if err != nil {
		return c.fsErr(p, err)
	}
	tg := &target{rel: p, parent: dir, name: name, info: fi, exists: true}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return c.symlinkDenied(p)
	}
	if c.t.reserved.Has(fi) {
		return c.reservedDenied(p)
	}
	if err := c.regular(tg); err != nil {
		return err
	}
	var r io.Reader
	if _, pinned := c.t.pins.revision(p); pinned {
		// A file this agent was handed is searched as fs.read reads it:
		// one whole snapshot, checked against the handed revision, and
		// only those bytes scanned.
		data, err := c.snapshot(tg)
		if err != nil {
			return err
		}
		if err := c.checkPin(p, data); err != nil {
			return err
		}
		r = bytes.NewReader(data)
	} else {
		f, _, err := c.openRegular(tg)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	var fileBytes int64
	maxFile, maxScan := c.t.limits.MaxFileBytes, c.t.limits.MaxScanBytes
	s.sc.reset(int(s.max + 1 - int64(len(s.matches))))
	text, err := s.sc.scan(r, func(n int) error {
		fileBytes += int64(n)
		s.scanned += int64(n)
		if maxFile > 0 && fileBytes > maxFile {
			return c.limit("limits.filesystem.max_file_bytes", maxFile)
		}
		if maxScan > 0 && s.scanned > maxScan {
			return c.limit("limits.filesystem.max_scan_bytes", maxScan)
		}
		return c.alive()
	})
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return c.ioErr(p, err)
	}
	if !text {
		return nil
	}
	for _, m := range s.sc.found {
		text := m.text
		if m.truncated && s.c.t.maskPage != nil {
			// A cut line is masked with what follows the cut, so no piece of
			// a secret it splits is returned.
			var n int
			text, n = s.c.t.maskPage(m.context, 0, len(m.text))
			s.masked += n
		}
		s.matches = append(s.matches, Match{Path: p, Line: m.line, Text: text, TextTruncated: m.truncated})
	}
	return nil
}
