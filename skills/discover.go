package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/internal/suggest"
)

// Discovery limits, as the reference fixes them. They are not configurable.
const (
	// MaxRoots bounds the configured roots.
	MaxRoots = 16
	// MaxRootIDBytes bounds a root ID.
	MaxRootIDBytes = 32
	// MaxRootPathBytes bounds a root's absolute path.
	MaxRootPathBytes = 4096
	// MaxDirectoryEntries bounds the directory entries read over all roots.
	MaxDirectoryEntries = 4096
	// MaxSkills bounds the admitted Skills over all roots.
	MaxSkills = 256
	// MaxMetadataBytes bounds the frontmatter bytes read over all packages.
	MaxMetadataBytes = 1 << 20
	// MaxFindings bounds the findings a catalog keeps; later ones are only
	// counted (Catalog.FindingsDropped).
	MaxFindings = 64
)

// SkillFile is the file that makes a directory a Skill package.
const SkillFile = "SKILL.md"

// Options configures Discover.
type Options struct {
	// Roots maps a root ID (1..32 bytes of [A-Za-z0-9_.-]) to an absolute,
	// already-resolved directory. The configuration layer resolves
	// options.skills.roots path objects; nothing else is ever scanned — no
	// home directory, no workspace, no implicit .agents/skills.
	Roots map[string]string
	// Contained, when not nil, is asked whether a root's directory lies
	// within the physical roots the authority layers allow
	// (authority[].skill_roots). A root it refuses yields a root_denied
	// finding and is not scanned. WithinDirs builds one from a list.
	Contained func(rootID, dir string) bool
	// Inline maps a Skill name to a Skill the deployment gives inline
	// (options.skills.inline), admitted as InlineRoot/NAME. Contained, when
	// set, is asked with InlineRoot and an empty directory.
	Inline map[string]Inline
	// Files maps a Skill name to the absolute, clean path of a single file
	// holding what a SKILL.md holds (options.skills.files, resolved by the
	// configuration layer), admitted as FileRoot/NAME. Contained, when
	// set, is asked with FileRoot and the file's path.
	Files map[string]string
	// Packages maps a Skill name to a package read from a versioned
	// archive or a git ref and pinned by digest (options.skills.packages),
	// admitted as PackageRoot/NAME. Contained, when set, is asked with
	// PackageRoot and the archive's or repository's path.
	Packages map[string]Package
}

// Empty reports whether the options name no Skill source: no root, no
// inline Skill, no single file, no package.
func (o Options) Empty() bool {
	return len(o.Roots) == 0 && len(o.Inline) == 0 && len(o.Files) == 0 && len(o.Packages) == 0
}

// WithinDirs returns a Contained check that admits a root only when its
// directory equals, or lies lexically under, one of allowed (absolute,
// cleaned paths). An empty list denies every root, as an empty
// authority skill_roots list does.
func WithinDirs(allowed []string) func(rootID, dir string) bool {
	dirs := make([]string, 0, len(allowed))
	for _, a := range allowed {
		if filepath.IsAbs(a) {
			dirs = append(dirs, filepath.Clean(a))
		}
	}
	return func(_, dir string) bool {
		dir = filepath.Clean(dir)
		for _, a := range dirs {
			if dir == a || strings.HasPrefix(dir, strings.TrimSuffix(a, string(filepath.Separator))+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
}

// Skill is one admitted catalog entry. It marshals to JSON with stable field
// order (metadata keys sorted), as `pablo skills list|show` prints it.
type Skill struct {
	// QualifiedName is ROOT/NAME, the identity policy, events and the
	// ledger use.
	QualifiedName string `json:"qualified_name"`
	// Root is the root ID.
	Root string `json:"root"`
	Frontmatter
	// RelativePath is the SKILL.md path relative to the root, with '/'.
	RelativePath string `json:"relative_path"`
	// MetadataSHA256 is the lowercase hex SHA-256 of the frontmatter bytes,
	// delimiters included: the metadata identity activation re-checks.
	MetadataSHA256 string `json:"metadata_sha256"`
	// CatalogBytes is the size of the frontmatter in bytes.
	CatalogBytes int `json:"catalog_bytes"`
	// QualifiedOnly is set when another root has a Skill of the same name,
	// so the short name is ambiguous and only ROOT/NAME selects this one.
	QualifiedOnly bool `json:"qualified_only,omitempty"`
	// Source says where a single-file or package Skill was read from
	// (for a git package, the commit its ref resolved to); nil for a
	// root's directory and an inline Skill.
	Source *Source `json:"source,omitempty"`
}

func (s Skill) clone() Skill {
	s.Frontmatter = s.Frontmatter.clone()
	if s.Source != nil {
		src := *s.Source
		s.Source = &src
	}
	return s
}

type rootRef struct {
	path string
	info fs.FileInfo
}

// Catalog is the immutable result of Discover: admitted Skills sorted by
// qualified name, and the findings of everything that was not admitted.
type Catalog struct {
	skills   []Skill
	dirs     map[string]fs.FileInfo // qualified name → package directory identity
	roots    map[string]rootRef
	findings []Finding
	dropped  int
	inline   map[string]string  // qualified name → inline instructions
	files    map[string]fileRef // qualified name → single file
	trees    map[string]*tree   // qualified name → package held in memory
	refused  map[string]error   // qualified name → why the Skill the deployment names was not admitted
}

// limits are the discovery bounds; Discover always uses referenceLimits.
type limits struct {
	entries, skills, metadataBytes, findings int
}

var referenceLimits = limits{
	entries: MaxDirectoryEntries, skills: MaxSkills,
	metadataBytes: MaxMetadataBytes, findings: MaxFindings,
}

// Discover scans each configured root one level deep for Skill packages and
// reads only their frontmatter. Broken packages become findings; they never
// stop the others. Discover fails only for invalid options, a crossed
// global limit (entries, admitted Skills, aggregate metadata) or ctx's end.
func Discover(ctx context.Context, opts Options) (*Catalog, error) {
	return discover(ctx, opts, referenceLimits)
}

// ValidRootID reports whether id is a valid root ID.
func ValidRootID(id string) bool { return ids.ValidName(id, MaxRootIDBytes) }

// checkSourcePath refuses a source path the configuration layer did not
// resolve: it must be absolute, clean UTF-8 of bounded length.
func checkSourcePath(what, path string) error {
	switch {
	case len(path) > MaxRootPathBytes:
		return &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
			Reason: fmt.Sprintf("%s: path has %d bytes; the limit is %d", what, len(path), MaxRootPathBytes)}
	case !utf8.ValidString(path) || !filepath.IsAbs(path) || filepath.Clean(path) != path:
		return &Error{Kind: ErrInvalidOptions, Code: CodeInvalidPath,
			Reason: fmt.Sprintf("%s: path %s must be an absolute, clean, UTF-8 path resolved by the configuration layer", what, strconv.Quote(path))}
	}
	return nil
}

func checkOptions(opts Options) ([]string, error) {
	if len(opts.Roots) > MaxRoots {
		return nil, &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
			Reason: fmt.Sprintf("%d skill roots configured; the limit is %d", len(opts.Roots), MaxRoots)}
	}
	for _, r := range []struct {
		id, what string
		n        int
	}{{InlineRoot, "inline", len(opts.Inline)}, {FileRoot, "single-file", len(opts.Files)}, {PackageRoot, "package", len(opts.Packages)}} {
		switch _, clash := opts.Roots[r.id]; {
		case r.n > MaxSkills:
			return nil, &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
				Reason: fmt.Sprintf("%d %s Skills configured; the limit is %d", r.n, r.what, MaxSkills)}
		case clash && r.n > 0:
			return nil, &Error{Kind: ErrInvalidOptions, Code: CodeInvalidSelection,
				Reason: fmt.Sprintf("root ID %q is the %s Skills' root; rename the root", r.id, r.what)}
		}
	}
	for name, path := range opts.Files {
		if err := checkSourcePath("file "+name, path); err != nil {
			return nil, err
		}
	}
	if len(opts.Packages) > MaxPackages {
		return nil, &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
			Reason: fmt.Sprintf("%d package Skills configured; the limit is %d", len(opts.Packages), MaxPackages)}
	}
	for name, p := range opts.Packages {
		if err := checkPackage(name, p); err != nil {
			return nil, err
		}
	}
	ids := make([]string, 0, len(opts.Roots))
	for id, dir := range opts.Roots {
		switch {
		case !ValidRootID(id):
			return nil, &Error{Kind: ErrInvalidOptions, Code: CodeInvalidSelection,
				Reason: fmt.Sprintf("root ID %s must be 1 to %d characters of A-Z, a-z, 0-9, '_', '.' or '-'", strconv.Quote(id), MaxRootIDBytes)}
		case len(dir) > MaxRootPathBytes:
			return nil, &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
				Reason: fmt.Sprintf("root %s: path has %d bytes; the limit is %d", id, len(dir), MaxRootPathBytes)}
		case !utf8.ValidString(dir) || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
			return nil, &Error{Kind: ErrInvalidOptions, Code: CodeInvalidPath,
				Reason: fmt.Sprintf("root %s: path %s must be an absolute, clean, UTF-8 directory path resolved by the configuration layer", id, strconv.Quote(dir))}
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

type discoverer struct {
	lim      limits
	cat      *Catalog
	entries  int
	metaSize int
}

func (d *discoverer) finding(root, dir string, code Code, reason string) {
	if len(d.cat.findings) >= d.lim.findings {
		d.cat.dropped++
		return
	}
	d.cat.findings = append(d.cat.findings, Finding{Root: root, Dir: dir, Code: code, Reason: reason})
}

// findingOf records err as a finding, keeping its code and reason.
func (d *discoverer) findingOf(root, dir string, err error) {
	var e *Error
	if errors.As(err, &e) {
		d.finding(root, dir, e.Code, e.Reason)
		return
	}
	d.finding(root, dir, CodeIOError, "SKILL.md cannot be read")
}

func discover(ctx context.Context, opts Options, lim limits) (*Catalog, error) {
	ids, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	d := &discoverer{lim: lim, cat: &Catalog{
		dirs:  map[string]fs.FileInfo{},
		roots: map[string]rootRef{},
	}}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, stopped(err)
		}
		if err := d.root(ctx, id, opts.Roots[id], opts.Contained); err != nil {
			return nil, err
		}
	}
	if err := d.inline(opts); err != nil {
		return nil, err
	}
	if err := d.files(opts); err != nil {
		return nil, err
	}
	if err := d.packages(ctx, opts); err != nil {
		return nil, err
	}
	d.resolveCollisions()
	if len(d.cat.skills) > d.lim.skills {
		return nil, &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
			Reason: fmt.Sprintf("more than %d Skills admitted; remove packages or roots", d.lim.skills)}
	}
	return d.cat, nil
}

func stopped(err error) error {
	return fmt.Errorf("skills: discovery stopped: %w", err)
}

func (d *discoverer) root(ctx context.Context, id, dir string, contained func(string, string) bool) error {
	if contained != nil && !contained(id, dir) {
		d.finding(id, "", CodeRootDenied, "the root lies outside every physical skill root the authority layers allow; add it to authority skill_roots or remove the root")
		return nil
	}
	r, info, prob, _ := openAbsDirNoFollow(dir, nil)
	switch prob {
	case probNone:
	case probMissing:
		d.finding(id, "", CodeRootUnavailable, "the root directory does not exist; create it or fix the binding")
		return nil
	case probSymlink:
		d.finding(id, "", CodeRootSymlink, "the root is a symlink; configure the real directory instead")
		return nil
	case probWrongType:
		d.finding(id, "", CodeRootNotDirectory, "the root is not a directory")
		return nil
	default:
		d.finding(id, "", CodeRootUnavailable, "the root directory cannot be opened; check that it exists and is readable")
		return nil
	}
	defer r.Close()
	d.cat.roots[id] = rootRef{path: dir, info: info}
	names, err := d.readDir(r)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Reason = "root " + id + ": " + e.Reason
			return e
		}
		d.finding(id, "", CodeRootUnavailable, "the root directory cannot be listed; check its permissions")
		return nil
	}
	for _, e := range names {
		if err := ctx.Err(); err != nil {
			return stopped(err)
		}
		if err := d.entry(r, id, e); err != nil {
			return err
		}
	}
	return nil
}

// readDir lists r's entries, sorted, charging them to the entry limit.
func (d *discoverer) readDir(r *os.Root) ([]fs.DirEntry, error) {
	f, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []fs.DirEntry
	for {
		batch, err := f.ReadDir(256)
		d.entries += len(batch)
		if d.entries > d.lim.entries {
			return nil, &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
				Reason: fmt.Sprintf("more than %d directory entries in the skill roots; remove entries or roots", d.lim.entries)}
		}
		all = append(all, batch...)
		if err != nil || len(batch) == 0 {
			break
		}
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all, nil
}

// entry examines one entry of a root. Only a returned error stops discovery.
func (d *discoverer) entry(r *os.Root, id string, e fs.DirEntry) error {
	name := e.Name()
	switch t := e.Type(); {
	case strings.HasPrefix(name, "."):
		return nil // hidden entries (.git, .DS_Store) are never packages
	case t&fs.ModeSymlink != 0:
		d.finding(id, name, CodePackageSymlink, "the package directory is a symlink; move the real directory into the root")
		return nil
	case t.IsRegular():
		return nil // plain files beside packages (README.md) are ignored
	case !t.IsDir():
		d.finding(id, name, CodePackageNotDirectory, "the entry is neither a directory nor a regular file")
		return nil
	}
	pkg, pkgInfo, prob, _ := openDirNoFollow(r, name, nil)
	switch prob {
	case probNone:
	case probSymlink:
		d.finding(id, name, CodePackageSymlink, "the package directory is a symlink; move the real directory into the root")
		return nil
	case probWrongType:
		d.finding(id, name, CodePackageNotDirectory, "the entry is not a directory")
		return nil
	default:
		d.finding(id, name, CodeIOError, "the package directory cannot be opened; check its permissions")
		return nil
	}
	defer pkg.Close()
	f, _, prob, _ := openFileNoFollow(pkg, SkillFile)
	switch prob {
	case probNone:
	case probMissing:
		d.finding(id, name, CodeMissingSkillFile, "the directory has no SKILL.md; add one or move the directory out of the root")
		return nil
	case probSymlink:
		d.finding(id, name, CodeSkillFileSymlink, "SKILL.md is a symlink; replace it with a regular file")
		return nil
	case probWrongType:
		d.finding(id, name, CodeSkillFileNotRegular, "SKILL.md is not a regular file")
		return nil
	default:
		d.finding(id, name, CodeIOError, "SKILL.md cannot be opened; check its permissions")
		return nil
	}
	defer f.Close()
	raw, _, err := readFrontmatter(f)
	if err != nil {
		d.findingOf(id, name, err)
		return nil
	}
	d.metaSize += len(raw)
	if d.metaSize > d.lim.metadataBytes {
		return &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
			Reason: fmt.Sprintf("the skill roots hold more than %d bytes of frontmatter; remove packages or roots", d.lim.metadataBytes)}
	}
	fm, err := decodeFrontmatter(raw)
	if err != nil {
		d.findingOf(id, name, err)
		return nil
	}
	if fm.Name != name {
		d.finding(id, name, CodeNameMismatch, fmt.Sprintf("name %s does not equal the directory name %s; rename one so they match",
			strconv.Quote(fm.Name), strconv.Quote(name)))
		return nil
	}
	sum := sha256.Sum256(raw)
	q := id + "/" + fm.Name
	d.cat.skills = append(d.cat.skills, Skill{
		QualifiedName:  q,
		Root:           id,
		Frontmatter:    fm,
		RelativePath:   name + "/" + SkillFile,
		MetadataSHA256: hex.EncodeToString(sum[:]),
		CatalogBytes:   len(raw),
	})
	d.cat.dirs[q] = pkgInfo
	return nil
}

// resolveCollisions applies the reference's rules: a same-root name
// collision removes every conflicting entry; a cross-root short-name
// collision keeps both and requires qualification.
func (d *discoverer) resolveCollisions() {
	removeSameRootDuplicates(d)
	slices.SortFunc(d.cat.skills, func(a, b Skill) int { return strings.Compare(a.QualifiedName, b.QualifiedName) })
	short := map[string]int{}
	for _, s := range d.cat.skills {
		short[s.Name]++
	}
	for i := range d.cat.skills {
		d.cat.skills[i].QualifiedOnly = short[d.cat.skills[i].Name] > 1
	}
}

func removeSameRootDuplicates(d *discoverer) {
	count := map[string]int{}
	for _, s := range d.cat.skills {
		count[s.QualifiedName]++
	}
	kept := d.cat.skills[:0]
	reported := map[string]bool{}
	for _, s := range d.cat.skills {
		if count[s.QualifiedName] == 1 {
			kept = append(kept, s)
			continue
		}
		delete(d.cat.dirs, s.QualifiedName)
		if !reported[s.QualifiedName] {
			reported[s.QualifiedName] = true
			d.finding(s.Root, s.Name, CodeDuplicateName, fmt.Sprintf("%d packages in root %s declare the name %s; every one is removed until the names are unique",
				count[s.QualifiedName], s.Root, strconv.Quote(s.Name)))
		}
	}
	d.cat.skills = kept
}

// catalogJSON is the stable JSON shape of a Catalog.
type catalogJSON struct {
	Skills          []Skill   `json:"skills"`
	Findings        []Finding `json:"findings"`
	FindingsDropped int       `json:"findings_dropped"`
}

// MarshalJSON renders the catalog as
// {"skills":[...],"findings":[...],"findings_dropped":N}; both arrays are
// present even when empty.
func (c *Catalog) MarshalJSON() ([]byte, error) {
	v := catalogJSON{Skills: c.skills, Findings: c.findings, FindingsDropped: c.dropped}
	if v.Skills == nil {
		v.Skills = []Skill{}
	}
	if v.Findings == nil {
		v.Findings = []Finding{}
	}
	return json.Marshal(v)
}

// Skills returns the admitted Skills sorted by qualified name.
func (c *Catalog) Skills() []Skill {
	out := make([]Skill, len(c.skills))
	for i, s := range c.skills {
		out[i] = s.clone()
	}
	return out
}

// Findings returns the discovery findings in discovery order (roots by ID,
// entries by name).
func (c *Catalog) Findings() []Finding { return slices.Clone(c.findings) }

// FindingsDropped counts findings beyond MaxFindings that were not kept.
func (c *Catalog) FindingsDropped() int { return c.dropped }

// RootDir returns the directory configured for a root ID that was scanned.
func (c *Catalog) RootDir(rootID string) (string, bool) {
	r, ok := c.roots[rootID]
	return r.path, ok
}

// Lookup finds a Skill by qualified ROOT/NAME, or by a short NAME that only
// one root provides. It fails with ErrNotFound or ErrAmbiguous.
func (c *Catalog) Lookup(name string) (Skill, error) {
	i, err := c.index(name)
	if err != nil {
		return Skill{}, err
	}
	return c.skills[i].clone(), nil
}

// names lists the catalog's qualified (ROOT/NAME) or short names, for a
// "did you mean".
func (c *Catalog) names(qualified bool) []string {
	out := make([]string, len(c.skills))
	for i, s := range c.skills {
		out[i] = s.Name
		if qualified {
			out[i] = s.QualifiedName
		}
	}
	return out
}

func (c *Catalog) index(name string) (int, error) {
	if strings.Contains(name, "/") {
		i, ok := slices.BinarySearchFunc(c.skills, name, func(s Skill, n string) int { return strings.Compare(s.QualifiedName, n) })
		if err, refused := c.refused[name]; !ok && refused {
			return 0, err
		}
		if !ok {
			return 0, &Error{Kind: ErrNotFound, Code: CodeNotFound, Skill: name,
				Reason: "no admitted Skill has this qualified name" + suggest.DidYouMean(name, c.names(true)) + "; run `pablo skills list` to see the catalog"}
		}
		return i, nil
	}
	var hits []int
	for i, s := range c.skills {
		if s.Name == name {
			hits = append(hits, i)
		}
	}
	switch len(hits) {
	case 0:
		for _, root := range []string{InlineRoot, FileRoot, PackageRoot} {
			if err, refused := c.refused[root+"/"+name]; refused {
				return 0, err
			}
		}
		return 0, &Error{Kind: ErrNotFound, Code: CodeNotFound, Skill: name,
			Reason: "no admitted Skill has this name" + suggest.DidYouMean(name, c.names(false)) + "; run `pablo skills list` to see the catalog"}
	case 1:
		return hits[0], nil
	}
	qs := make([]string, len(hits))
	for i, h := range hits {
		qs[i] = c.skills[h].QualifiedName
	}
	return 0, &Error{Kind: ErrAmbiguous, Code: CodeAmbiguous, Skill: name,
		Reason: "several roots provide this name; select one of " + strings.Join(qs, ", ")}
}
