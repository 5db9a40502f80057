package skills

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of a package read into memory from an archive or a git tree.
// Crossing one fails with ErrLimitExceeded before more is read.
const (
	// MaxPackageSourceBytes bounds an archive file.
	MaxPackageSourceBytes = 16 << 20
	// MaxPackageEntries bounds the entries (files and directories) of one
	// package.
	MaxPackageEntries = 1024
	// MaxPackageFileBytes bounds one file of a package.
	MaxPackageFileBytes = 4 << 20
	// MaxPackageBytes bounds the unpacked bytes of one package.
	MaxPackageBytes = 16 << 20
	// MaxPackageRatio bounds how many times its archive's size a package
	// may unpack to, past the first MiB: more is refused as a
	// decompression bomb.
	MaxPackageRatio = 100
)

// ErrInvalidPackage reports a package archive or tree that cannot be read
// as one: a malformed archive, two entries with one path, no SKILL.md.
var ErrInvalidPackage = errors.New("skills: invalid package")

// ErrVersionUnresolved reports a package whose Skill does not declare the
// version the deployment asks for.
var ErrVersionUnresolved = errors.New("skills: package version does not resolve")

// Package source codes.
const (
	// CodePackageInvalid: the archive or tree is malformed.
	CodePackageInvalid Code = "package_invalid"
	// CodeUnsafeEntry: an entry's path leaves the package (absolute, '..')
	// or the entry is a symlink, hard link, device, FIFO or submodule.
	CodeUnsafeEntry Code = "unsafe_entry"
)

// tree is a Skill package held in memory: each regular file by its
// slash-separated path, and the directories that hold them. It is built
// once, under the package bounds, and never changes.
type tree struct {
	files map[string][]byte
	dirs  map[string]bool
}

// treeBuilder fills a tree, charging entries and bytes to the bounds.
type treeBuilder struct {
	t       tree
	entries int
	bytes   int64
	// budget is the unpacked bytes allowed: MaxPackageBytes, or less for
	// a small archive (MaxPackageRatio).
	budget int64
	// ratio reports that budget is the ratio's, not MaxPackageBytes.
	ratio bool
}

func newTreeBuilder(archiveBytes int64) *treeBuilder {
	b := &treeBuilder{t: tree{files: map[string][]byte{}, dirs: map[string]bool{}}, budget: MaxPackageBytes}
	if archiveBytes >= 0 {
		if r := max(1<<20, archiveBytes*MaxPackageRatio); r < b.budget {
			b.budget, b.ratio = r, true
		}
	}
	return b
}

func limitError(reason string) error {
	return &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded, Reason: reason}
}

func unsafeEntry(name, reason string) error {
	return &Error{Kind: ErrUnsafePath, Code: CodeUnsafeEntry, Path: quotePath(name), Reason: reason}
}

func invalidPackage(reason string, cause error) error {
	return &Error{Kind: ErrInvalidPackage, Code: CodePackageInvalid, Reason: reason, Err: cause}
}

// quotePath bounds and quotes an entry name for a message: a hostile
// archive's name is shown, never trusted.
func quotePath(name string) string {
	if len(name) > 200 {
		name = name[:200]
	}
	return strconv.Quote(name)
}

// count charges one entry.
func (b *treeBuilder) count() error {
	if b.entries++; b.entries > MaxPackageEntries {
		return limitError(fmt.Sprintf("the package has more than %d entries", MaxPackageEntries))
	}
	return nil
}

// charge charges n unpacked bytes.
func (b *treeBuilder) charge(n int64) error {
	if b.bytes += n; b.bytes > b.budget {
		if b.ratio {
			return limitError(fmt.Sprintf("the package unpacks to more than %d times its archive's size; a decompression bomb is refused", MaxPackageRatio))
		}
		return limitError(fmt.Sprintf("the package unpacks to more than %d bytes", MaxPackageBytes))
	}
	return nil
}

// entryPath checks an archive or tree entry's name and returns its clean
// package path ("" for the package's own root): relative, '/'-separated,
// UTF-8, with no '..', '.' or empty component (a leading "./" and a
// directory's trailing '/' are allowed), no NUL and no '\'.
func entryPath(name string) (string, error) {
	p := strings.TrimPrefix(name, "./")
	p = strings.TrimSuffix(p, "/")
	switch {
	case p == "" || p == ".":
		return "", nil
	case len(p) > MaxReadPathBytes:
		return "", unsafeEntry(name, fmt.Sprintf("the entry's path is longer than %d bytes", MaxReadPathBytes))
	case !utf8.ValidString(p):
		return "", unsafeEntry(name, "the entry's path is not UTF-8")
	case strings.HasPrefix(p, "/"):
		return "", unsafeEntry(name, "the entry's path is absolute")
	case strings.ContainsAny(p, "\\\x00"):
		return "", unsafeEntry(name, `the entry's path holds '\' or NUL`)
	}
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "..":
			return "", unsafeEntry(name, "the entry's path climbs out of the package with '..'")
		case "", ".":
			return "", unsafeEntry(name, "the entry's path has an empty or '.' component")
		}
	}
	return p, nil
}

// dir records a directory and its parents.
func (b *treeBuilder) dir(name string) error {
	p, err := entryPath(name)
	if err != nil || p == "" {
		return err
	}
	return b.parents(p + "/x")
}

// parents records every directory above p, refusing one that is a file.
func (b *treeBuilder) parents(p string) error {
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		d := p[:i]
		if _, clash := b.t.files[d]; clash {
			return invalidPackage(fmt.Sprintf("%s is both a file and a directory", quotePath(d)), nil)
		}
		if b.t.dirs[d] {
			break
		}
		b.t.dirs[d] = true
	}
	return nil
}

// file records a regular file's bytes.
func (b *treeBuilder) file(name string, data []byte) error {
	p, err := entryPath(name)
	if err != nil {
		return err
	}
	if p == "" || b.t.dirs[p] {
		return invalidPackage(fmt.Sprintf("%s is both a file and a directory", quotePath(name)), nil)
	}
	if _, dup := b.t.files[p]; dup {
		return invalidPackage(fmt.Sprintf("two entries have the path %s", quotePath(p)), nil)
	}
	if err := b.parents(p); err != nil {
		return err
	}
	b.t.files[p] = data
	return nil
}

// finish returns the package: the tree itself when SKILL.md is at its
// root, else its one top-level directory when that holds SKILL.md.
func (b *treeBuilder) finish() (*tree, error) {
	t := &b.t
	if _, ok := t.files[SkillFile]; ok {
		return t, nil
	}
	var top string
	for p := range t.files {
		first, _, _ := strings.Cut(p, "/")
		if top != "" && first != top {
			top = ""
			break
		}
		top = first
	}
	if top == "" || !t.dirs[top] {
		return nil, &Error{Kind: ErrInvalidPackage, Code: CodeMissingSkillFile,
			Reason: "the package holds no SKILL.md at its root or in its one top-level directory"}
	}
	for d := range t.dirs {
		if d != top && !strings.HasPrefix(d, top+"/") {
			return nil, &Error{Kind: ErrInvalidPackage, Code: CodeMissingSkillFile,
				Reason: "the package holds no SKILL.md at its root or in its one top-level directory"}
		}
	}
	if _, ok := t.files[top+"/"+SkillFile]; !ok {
		return nil, &Error{Kind: ErrInvalidPackage, Code: CodeMissingSkillFile,
			Reason: fmt.Sprintf("the package's top-level directory %s holds no SKILL.md", quotePath(top))}
	}
	out := &tree{files: map[string][]byte{}, dirs: map[string]bool{}}
	for p, data := range t.files {
		out.files[strings.TrimPrefix(p, top+"/")] = data
	}
	for d := range t.dirs {
		if d != top {
			out.dirs[strings.TrimPrefix(d, top+"/")] = true
		}
	}
	return out, nil
}
