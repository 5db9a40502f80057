package memory

import (
	"bytes"
	"strconv"
	"strings"
)

// MaxPatchBytes bounds a patch read for validation.
const MaxPatchBytes = 4 << 20

// ChangesFromPatch reads a unified diff in `git format-patch` (or `git
// diff`) shape against ix's commit and returns the record changes it
// makes, so a proposed patch can be validated like proposed records. Every
// file it touches must lie under a graph path; a hunk that does not apply
// to the pinned blob is an error naming the patch line.
func (s *Store) ChangesFromPatch(ix *Index, text []byte, scope Scope) ([]ProposedChange, error) {
	if len(text) > MaxPatchBytes {
		return nil, errorf(ErrInvalidArguments, CodeBadProposal, "", 0, "patch is %d bytes, over the %d-byte bound", len(text), MaxPatchBytes)
	}
	lines := strings.Split(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n")
	bad := func(line int, format string, args ...any) ([]ProposedChange, error) {
		return nil, errorf(ErrInvalidArguments, CodeBadProposal, "patch", line, format, args...)
	}
	type filePatch struct {
		path          string
		line          int
		added, gone   bool
		hunks         [][]string
		hunkStarts    []int
		hunkLineStart []int
	}
	var files []*filePatch
	var cur *filePatch
	inHunk := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "diff --git a/"):
			rest := strings.TrimPrefix(l, "diff --git a/")
			j := strings.Index(rest, " b/")
			if j < 0 || rest[:j] != rest[j+3:] {
				return bad(i+1, "renames and copies are not record changes; write one path per file")
			}
			cur = &filePatch{path: rest[:j], line: i + 1}
			files = append(files, cur)
			inHunk = false
		case cur == nil:
			continue // the mail header and the diffstat
		case l == "-- ":
			cur, inHunk = nil, false // the signature
		case strings.HasPrefix(l, "new file mode"):
			cur.added = true
		case strings.HasPrefix(l, "deleted file mode"):
			cur.gone = true
		case strings.HasPrefix(l, "@@ -"):
			f := strings.Fields(l)
			if len(f) < 3 {
				return bad(i+1, "malformed hunk header")
			}
			start, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			n, err := strconv.Atoi(start)
			if err != nil {
				return bad(i+1, "malformed hunk header")
			}
			cur.hunks = append(cur.hunks, nil)
			cur.hunkStarts = append(cur.hunkStarts, n)
			cur.hunkLineStart = append(cur.hunkLineStart, i+2)
			inHunk = true
		case inHunk && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") || strings.HasPrefix(l, "\\")):
			h := len(cur.hunks) - 1
			cur.hunks[h] = append(cur.hunks[h], l)
		case inHunk && l == "":
			// A trailing empty line ends the last hunk.
		}
	}
	if len(files) == 0 {
		return bad(0, "no `diff --git` section; give a patch from memory.update.propose or git format-patch")
	}
	if len(files) > MaxProposedChanges {
		return bad(0, "%d files, over the %d bound", len(files), MaxProposedChanges)
	}
	out := make([]ProposedChange, 0, len(files))
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if c, err := cleanRepoPath(f.path); err != nil || c != f.path || !under(f.path, ix.graph) {
			return bad(f.line, "%s is not under a graph path %v", f.path, ix.graph)
		}
		// Each section applies to the pinned file, not to the one before
		// it: a path twice would be carried as two changes no `git am`
		// takes.
		if seen[f.path] {
			return bad(f.line, "%s has a second section; write one section per path", f.path)
		}
		seen[f.path] = true
		var old []string
		var prev *Record
		if !f.added {
			r, ok := ix.byPathIn(f.path, scope)
			if !ok {
				return nil, errorf(ErrNotFound, CodeNotFound, "", 0, "no record %q at commit %s", f.path, short(ix.pin.Commit))
			}
			prev = r
			// The base is the record as scope sees it, as Propose wrote it.
			b, _, err := s.baseText(ix, r, scope)
			if err != nil {
				return nil, err
			}
			old = strings.Split(strings.TrimSuffix(b, "\n"), "\n")
		}
		var res []string
		at := 0 // next old line (0-based)
		for h, hunk := range f.hunks {
			start := max(f.hunkStarts[h]-1, 0) // a new file's hunk is "-0,0"
			if start < at || start > len(old) {
				return bad(f.hunkLineStart[h]-1, "hunk starts at line %d, which the pinned %s does not have", start+1, f.path)
			}
			res = append(res, old[at:start]...)
			at = start
			for k, l := range hunk {
				switch l[0] {
				case ' ', '-':
					if at >= len(old) || old[at] != l[1:] {
						return bad(f.hunkLineStart[h]+k, "the patch does not apply to %s at the pinned commit", f.path)
					}
					if l[0] == ' ' {
						res = append(res, old[at])
					}
					at++
				case '+':
					res = append(res, l[1:])
				}
			}
		}
		res = append(res, old[at:]...)
		if f.gone {
			// A deletion's hunk must remove exactly the pinned lines.
			if len(res) != 0 {
				return bad(f.line, "the deletion of %s does not remove the pinned file whole", f.path)
			}
			out = append(out, ProposedChange{Op: "delete", Record: Record{ID: prev.ID}})
			continue
		}
		content := []byte(strings.Join(res, "\n") + "\n")
		if bytes.Equal(content, []byte("\n")) {
			content = nil
		}
		r, err := ParseRecord(f.path, content, s.limits)
		if err != nil {
			return nil, err
		}
		op := "add"
		if !f.added {
			op = "edit"
		}
		out = append(out, ProposedChange{Op: op, Record: *r})
	}
	return out, nil
}
