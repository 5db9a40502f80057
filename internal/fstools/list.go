package fstools

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
)

// EntryType is the type of a listed entry.
type EntryType string

// The entry types. A symlink is reported as such; its target never is.
const (
	TypeFile      EntryType = "file"
	TypeDirectory EntryType = "directory"
	TypeSymlink   EntryType = "symlink"
	TypeOther     EntryType = "other"
)

// Entry is one listed directory entry.
type Entry struct {
	// Path is workspace-relative, with "/" separators.
	Path string    `json:"path"`
	Type EntryType `json:"type"`
}

// ListResult is fs.list's payload.
type ListResult struct {
	Path       string  `json:"path"`
	Entries    []Entry `json:"entries"`
	NextOffset *int64  `json:"next_offset"`
	Truncated  bool    `json:"truncated"`
}

// List runs fs.list: the direct entries of a directory, sorted by their
// UTF-8 bytes, one page at a time.
func (t *Tools) List(ctx context.Context, a ListArgs) (*ListResult, error) {
	c := t.begin(ctx, authority.FSList)
	if err := c.alive(); err != nil {
		return nil, err
	}
	if a.Offset < 0 {
		return nil, &ArgumentError{Tool: c.id, Field: "offset", Reason: "must not be negative"}
	}
	if a.MaxEntries < 0 {
		return nil, &ArgumentError{Tool: c.id, Field: "max_entries", Reason: "must be positive"}
	}
	pageSize := a.MaxEntries
	if pageSize == 0 {
		pageSize = DefaultListEntries
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
	ents, err := c.readDir(dir, rel, 0, false)
	if err != nil {
		return nil, err
	}
	n := int64(len(ents))
	if a.Offset > n {
		return nil, &Error{Tool: c.id, Code: InvalidRange, Path: rel, Detail: "offset is past the last entry; use 0 or a next_offset"}
	}
	end := n
	if pageSize < n-a.Offset {
		end = a.Offset + pageSize
	}
	res := &ListResult{Path: rel, Entries: make([]Entry, 0, end-a.Offset), Truncated: end < n}
	for _, e := range ents[a.Offset:end] {
		res.Entries = append(res.Entries, Entry{Path: join(rel, e.name), Type: e.typ})
	}
	if end < n {
		res.NextOffset = &end
	}
	return res, nil
}

// openDir opens the directory named by parts, no-follow and verified.
func (c *call) openDir(rel string, parts []string) (*os.Root, error) {
	if len(parts) == 0 {
		return c.openDirs(rel, nil)
	}
	parent, err := c.openDirs(rel, parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	return c.openSubdir(parent, rel, parts[len(parts)-1])
}

type dirent struct {
	name string
	typ  EntryType
}

// readBatch is how many entries are read per step between cancellation
// checks.
const readBatch = 256

// readDir reads a whole directory, sorted by name bytes, charging entries
// against MaxEntries (already counts entries charged earlier in the same
// call). Names that are not UTF-8 give unsupported_encoding, or, with
// skipBadNames, an entry with an empty name that callers skip.
func (c *call) readDir(dir *os.Root, rel string, already int64, skipBadNames bool) ([]dirent, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, c.fsErr(rel, err)
	}
	defer f.Close()
	max := c.t.limits.MaxEntries
	var out []dirent
	for {
		batch, rerr := f.ReadDir(readBatch)
		for _, e := range batch {
			if !utf8.ValidString(e.Name()) {
				if skipBadNames {
					out = append(out, dirent{typ: TypeOther})
					continue
				}
				return nil, &Error{Tool: c.id, Code: UnsupportedEncoding, Path: rel, Detail: "the directory holds an entry whose name is not UTF-8"}
			}
			if e.Type().IsRegular() && !c.t.reserved.empty() {
				// A reserved file is left out of listings (and so of
				// searches): its name and size tell nothing.
				if fi, err := e.Info(); err == nil && c.t.reserved.Has(fi) {
					continue
				}
			}
			out = append(out, dirent{name: e.Name(), typ: entryType(e.Type())})
		}
		if max > 0 && already+int64(len(out)) > max {
			return nil, c.limit("limits.filesystem.max_entries", max)
		}
		if errors.Is(rerr, io.EOF) || (rerr == nil && len(batch) == 0) {
			break
		}
		if rerr != nil {
			return nil, c.fsErr(rel, rerr)
		}
		if err := c.alive(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

func entryType(m fs.FileMode) EntryType {
	switch {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDirectory
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	}
	return TypeOther
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
