package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// FileRoot is the root ID of the single-file Skills a deployment names
// (options.skills.files): their qualified names are file/NAME, so no
// configured root may use this ID alongside them.
const FileRoot = "file"

// CodeSourceMissing: a single file, archive or repository a Skill is
// read from does not exist.
const CodeSourceMissing Code = "source_missing"

// A single-file Skill is one file holding what a SKILL.md holds
// (frontmatter and instructions), named explicitly in the deployment:
// options.skills.files.NAME = path. It is opt-in so the plain files beside
// packages in a root (a README.md) never become Skills. Its frontmatter is
// read through the same strict walk and limits as a SKILL.md and its name
// must equal NAME; the file itself plays SKILL.md, so skill.read serves
// only the path "SKILL.md" of it. Its digest (FileDigest) is that of a
// package holding only that file as SKILL.md.

// fileRef is an admitted single file: its path and identity at discovery.
type fileRef struct {
	path string
	info fs.FileInfo
}

// openSingleFile opens path without following a symlink in its last
// element: its directory is opened as an os.Root (path is resolved by the
// configuration layer, so its directory is real) and the file through it.
// When want is not nil the file must be that same file.
func openSingleFile(path string, want fs.FileInfo) (*os.File, fs.FileInfo, problem, error) {
	dir, _, prob, err := openAbsDirNoFollow(filepath.Dir(path), nil)
	if prob != probNone {
		if prob == probSymlink || prob == probWrongType {
			prob = probIO
		}
		return nil, nil, prob, err
	}
	defer dir.Close()
	f, st, prob, err := openFileNoFollow(dir, filepath.Base(path))
	if prob != probNone {
		return nil, st, prob, err
	}
	if want != nil && !os.SameFile(want, st) {
		f.Close()
		return nil, st, probChanged, nil
	}
	return f, st, probNone, nil
}

// FileDigest returns the digest of a single-file Skill: the PackageDigest
// of a package that holds only that file as SKILL.md, so moving the file
// into a package directory keeps its pin. The file must be a regular file
// (a symlink fails with ErrUnsafePath) of at most 64 MiB.
func FileDigest(path string) (string, error) {
	f, st, prob, err := openSingleFile(path, nil)
	switch prob {
	case probNone:
	case probSymlink, probWrongType:
		return "", &Error{Kind: ErrUnsafePath, Code: CodeSkillFileNotRegular, Path: path, Reason: "the Skill file is a symlink or not a regular file"}
	case probMissing:
		return "", &Error{Kind: ErrNotFound, Code: CodeSourceMissing, Path: path, Reason: "the Skill file does not exist"}
	default:
		return "", &Error{Kind: ErrIO, Code: CodeIOError, Path: path, Reason: "the Skill file cannot be opened", Err: err}
	}
	defer f.Close()
	if st.Size() > maxDigestBytes {
		return "", &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded, Path: path, Reason: fmt.Sprintf("the Skill file holds more than %d bytes", maxDigestBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxDigestBytes+1))
	if err != nil {
		return "", &Error{Kind: ErrIO, Code: CodeIOError, Path: path, Reason: "the Skill file cannot be read", Err: err}
	}
	if int64(len(data)) != st.Size() {
		return "", &Error{Kind: ErrChanged, Code: CodeChanged, Path: path, Reason: "the file changed while it was hashed"}
	}
	return treeDigest(map[string][]byte{SkillFile: data}), nil
}

// files admits the options' single-file Skills, each broken one a finding.
func (d *discoverer) files(opts Options) error {
	for _, name := range slices.Sorted(maps.Keys(opts.Files)) {
		path := opts.Files[name]
		if opts.Contained != nil && !opts.Contained(FileRoot, path) {
			d.refuse(FileRoot, name, &Error{Kind: ErrNotFound, Code: CodeRootDenied,
				Reason: "the file lies outside every physical skill root the authority layers allow; add its directory to authority skill_roots or remove options.skills.files." + name})
			continue
		}
		f, st, prob, _ := openSingleFile(path, nil)
		switch prob {
		case probNone:
		case probMissing:
			d.refuse(FileRoot, name, &Error{Kind: ErrNotFound, Code: CodeSourceMissing, Reason: "the file does not exist; create it or fix options.skills.files." + name})
			continue
		case probSymlink:
			d.refuse(FileRoot, name, &Error{Kind: ErrUnsafePath, Code: CodeSkillFileSymlink, Reason: "the file is a symlink; name the real file instead"})
			continue
		case probWrongType:
			d.refuse(FileRoot, name, &Error{Kind: ErrUnsafePath, Code: CodeSkillFileNotRegular, Reason: "the path is not a regular file"})
			continue
		default:
			d.refuse(FileRoot, name, &Error{Kind: ErrIO, Code: CodeIOError, Reason: "the file cannot be opened; check that its directory exists and is readable"})
			continue
		}
		raw, _, err := readFrontmatter(f)
		f.Close()
		if err != nil {
			d.refuse(FileRoot, name, err)
			continue
		}
		if err := d.chargeMeta(len(raw)); err != nil {
			return err
		}
		fm, err := named(name, raw)
		if err != nil {
			d.refuse(FileRoot, name, err)
			continue
		}
		s := d.add(FileRoot, "options.skills.files."+name, raw, fm)
		s.Source = &Source{Format: "file", Locator: path}
		if d.cat.files == nil {
			d.cat.files = map[string]fileRef{}
		}
		d.cat.files[s.QualifiedName] = fileRef{path: path, info: st}
	}
	return nil
}

// chargeMeta charges n frontmatter bytes to the catalog's metadata limit.
func (d *discoverer) chargeMeta(n int) error {
	if d.metaSize += n; d.metaSize > d.lim.metadataBytes {
		return &Error{Kind: ErrLimitExceeded, Code: CodeLimitExceeded,
			Reason: fmt.Sprintf("the Skills hold more than %d bytes of frontmatter; remove Skills or roots", d.lim.metadataBytes)}
	}
	return nil
}

// named decodes the frontmatter raw of a Skill the deployment names and
// checks its name is that name.
func named(name string, raw []byte) (Frontmatter, error) {
	fm, err := decodeFrontmatter(raw)
	if err != nil {
		return fm, err
	}
	if fm.Name != name {
		return fm, &Error{Kind: ErrInvalidFrontmatter, Code: CodeNameMismatch,
			Reason: fmt.Sprintf("name %s does not equal the configured name %s; rename one so they match", strconv.Quote(fm.Name), strconv.Quote(name))}
	}
	return fm, nil
}

// add appends an admitted Skill and returns it; the pointer is valid
// until the next append.
func (d *discoverer) add(root, rel string, raw []byte, fm Frontmatter) *Skill {
	sum := sha256.Sum256(raw)
	d.cat.skills = append(d.cat.skills, Skill{
		QualifiedName:  root + "/" + fm.Name,
		Root:           root,
		Frontmatter:    fm,
		RelativePath:   rel,
		MetadataSHA256: hex.EncodeToString(sum[:]),
		CatalogBytes:   len(raw),
	})
	return &d.cat.skills[len(d.cat.skills)-1]
}
