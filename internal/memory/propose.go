package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// Proposal is a change to the memory: records to add, edit or delete.
type Proposal struct {
	Subject string           `json:"subject"`
	Changes []ProposedChange `json:"changes"`
	// Author and Date fill the patch's header; Date comes from the
	// caller's clock.
	Author string    `json:"-"`
	Date   time.Time `json:"-"`
}

// MaxProposedChanges bounds one proposal.
const MaxProposedChanges = 100

// ProposedChange is one record added, edited (replaced whole) or deleted.
// Add places a record at Record.Path, or at the first graph path under
// "<kind>/<id>.md"; edit and delete find the record by Record.ID.
type ProposedChange struct {
	Op     string `json:"op"` // add, edit, delete
	Record Record `json:"record"`
}

// Patch is a proposal written as a `git format-patch` mail against the
// pinned commit: `git am` or `git apply` takes it.
type Patch struct {
	Base   string   `json:"base"`
	Files  []string `json:"files"`
	Text   []byte   `json:"-"`
	SHA256 string   `json:"sha256"`
}

type fileChange struct {
	path     string
	old, new string
	oldHash  plumbing.Hash
	add, del bool
}

// Propose turns p into a patch against ix's commit. Each record it touches
// must be of a kind scope allows; it writes nothing anywhere.
func (s *Store) Propose(ix *Index, p Proposal, scope Scope) (Patch, error) {
	bad := func(format string, args ...any) (Patch, error) {
		return Patch{}, errorf(ErrInvalidArguments, CodeBadProposal, "", 0, format, args...)
	}
	switch {
	case strings.TrimSpace(p.Subject) == "" || strings.ContainsAny(p.Subject, "\r\n"):
		return bad("subject must be one non-empty line")
	case len(p.Changes) == 0:
		return bad("a proposal has at least one change")
	case len(p.Changes) > MaxProposedChanges:
		return bad("%d changes, over the %d bound; split the proposal", len(p.Changes), MaxProposedChanges)
	}
	var files []fileChange
	touched := map[string]bool{}
	for i, c := range p.Changes {
		r := c.Record
		if !scope.AllowsKind(r.Kind) && c.Op != "delete" {
			return bad("change %d: kind %q is outside the propose grant", i, r.Kind)
		}
		var fc fileChange
		switch c.Op {
		case "add":
			if r.Path == "" {
				if len(ix.graph) == 0 {
					return bad("change %d: no graph path is configured; give record.path", i)
				}
				r.Path = ix.graph[0] + r.Kind + "/" + r.ID + ".md"
			}
			cp, err := cleanRepoPath(r.Path)
			if err != nil || cp != r.Path || !under(cp, ix.graph) || !isMarkdown(cp) {
				return bad("change %d: path %q must be a clean .md path under a graph path %v", i, r.Path, ix.graph)
			}
			if !scope.AllowsPath(cp) {
				return bad("change %d: path %q is outside the propose grant", i, r.Path)
			}
			// Only what scope sees may refuse an add: a record outside
			// it at the same ID or path is a conflict for the reviewer
			// (Review), never an answer to the proposer.
			if _, ok := ix.byIDIn(r.ID, scope); ok {
				return bad("change %d: record %q exists; use op edit", i, r.ID)
			}
			if _, ok := ix.byPathIn(cp, scope); ok {
				return bad("change %d: path %q is taken at the pinned commit", i, cp)
			}
			fc = fileChange{path: cp, add: true}
		case "edit", "delete":
			old, err := ix.Read(r.ID, scope)
			if err != nil {
				return Patch{}, err
			}
			if c.Op == "edit" && r.Kind != old.Kind && !scope.AllowsKind(r.Kind) {
				return bad("change %d: kind %q is outside the propose grant", i, r.Kind)
			}
			orig := ix.byID[r.ID]
			base, hash, err := s.baseText(ix, orig, scope)
			if err != nil {
				return Patch{}, err
			}
			r.Path = orig.Path
			fc = fileChange{path: orig.Path, old: base, oldHash: hash, del: c.Op == "delete"}
		default:
			return bad("change %d: op must be add, edit or delete, got %q", i, c.Op)
		}
		if touched[fc.path] {
			return bad("change %d: %s is changed twice; merge the changes", i, fc.path)
		}
		touched[fc.path] = true
		if !fc.del {
			body, err := Render(&r)
			if err != nil {
				return Patch{}, err
			}
			if _, err := ParseRecord(r.Path, body, s.limits); err != nil {
				return Patch{}, fmt.Errorf("change %d: the rendered record does not read back: %w", i, err)
			}
			fc.new = string(body)
		}
		files = append(files, fc)
	}
	return formatPatch(ix.pin.Commit, p, files)
}

// baseText is the text of record r a caller of scope proposes against:
// its blob when scope is not bounded (it sees the whole graph), else the
// record as scope sees it, rendered, whether or not it names a hidden
// record. A blob that names a record outside scope is never the base (a
// diff's context and removed lines would name it), and choosing the blob
// only for records that name none would itself tell them apart: a
// non-canonical blob re-rendered would mean a hidden edge. Review carries
// such a patch back onto the blob.
func (s *Store) baseText(ix *Index, r *Record, scope Scope) (string, plumbing.Hash, error) {
	if !ix.bounded(scope) {
		s.mu.Lock()
		b, err := s.blob(r.Path, plumbing.NewHash(r.Blob))
		s.mu.Unlock()
		return string(b), plumbing.NewHash(r.Blob), err
	}
	b, err := Render(ix.view(r, scope))
	if err != nil {
		return "", plumbing.ZeroHash, err
	}
	return string(b), plumbing.ComputeHash(plumbing.BlobObject, b), nil
}

// textAs is the text of the file at path f, as scope may see it: its blob,
// or, for a record under a bounded scope, the record as scope sees it,
// rendered (see baseText). The caller holds s.mu.
func (s *Store) textAs(ix *Index, f file, scope Scope) ([]byte, error) {
	if r, ok := ix.byPath[f.Path]; ok && ix.bounded(scope) {
		return Render(ix.view(r, scope))
	}
	return s.blob(f.Path, f.Hash)
}

func formatPatch(base string, p Proposal, files []fileChange) (Patch, error) {
	author := p.Author
	if author == "" {
		author = "Pablo <pablo@invalid>"
	}
	var body bytes.Buffer
	fp := make([]fdiff.FilePatch, 0, len(files))
	var stat strings.Builder
	adds, dels := 0, 0
	names := make([]string, 0, len(files))
	for _, f := range files {
		chunks := chunksOf(diff.Do(f.old, f.new))
		a, d := 0, 0
		for _, c := range chunks {
			n := strings.Count(c.content, "\n")
			switch c.op {
			case fdiff.Add:
				a += n
			case fdiff.Delete:
				d += n
			}
		}
		adds, dels = adds+a, dels+d
		fmt.Fprintf(&stat, " %s | %d %s%s\n", f.path, a+d, strings.Repeat("+", min(a, 40)), strings.Repeat("-", min(d, 40)))
		pf := &patchFile{path: f.path, mode: filemode.Regular}
		var from, to fdiff.File
		if !f.add {
			from = &patchFile{path: f.path, mode: filemode.Regular, hash: f.oldHash}
		}
		if !f.del {
			pf.hash = plumbing.ComputeHash(plumbing.BlobObject, []byte(f.new))
			to = pf
		}
		fp = append(fp, filePatch{from: from, to: to, chunks: chunks})
		names = append(names, f.path)
	}
	fmt.Fprintf(&body, "From %s Mon Sep 17 00:00:00 2001\n", plumbing.ZeroHash)
	fmt.Fprintf(&body, "From: %s\n", author)
	fmt.Fprintf(&body, "Date: %s\n", p.Date.UTC().Format("Mon, 2 Jan 2006 15:04:05 -0700"))
	fmt.Fprintf(&body, "Subject: [PATCH] %s\n\n", p.Subject)
	fmt.Fprintf(&body, "Proposed against memory commit %s.\n---\n", base)
	body.WriteString(stat.String())
	fmt.Fprintf(&body, " %d file%s changed, %d insertion%s(+), %d deletion%s(-)\n\n", len(files), plural(len(files)), adds, plural(adds), dels, plural(dels))
	if err := fdiff.NewUnifiedEncoder(&body, fdiff.DefaultContextLines).Encode(patch(fp)); err != nil {
		return Patch{}, err
	}
	body.WriteString("-- \npablo\n\n")
	sum := sha256.Sum256(body.Bytes())
	return Patch{Base: base, Files: names, Text: body.Bytes(), SHA256: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

type chunk struct {
	content string
	op      fdiff.Operation
}

func (c chunk) Content() string       { return c.content }
func (c chunk) Type() fdiff.Operation { return c.op }
func chunksOf(ds []diffmatchpatch.Diff) []chunk {
	out := make([]chunk, 0, len(ds))
	for _, d := range ds {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		}
		out = append(out, chunk{d.Text, op})
	}
	return out
}

type patchFile struct {
	path string
	mode filemode.FileMode
	hash plumbing.Hash
}

func (f *patchFile) Hash() plumbing.Hash     { return f.hash }
func (f *patchFile) Mode() filemode.FileMode { return f.mode }
func (f *patchFile) Path() string            { return f.path }

type filePatch struct {
	from, to fdiff.File
	chunks   []chunk
}

func (f filePatch) IsBinary() bool                  { return false }
func (f filePatch) Files() (fdiff.File, fdiff.File) { return f.from, f.to }
func (f filePatch) Chunks() []fdiff.Chunk {
	out := make([]fdiff.Chunk, len(f.chunks))
	for i, c := range f.chunks {
		out[i] = c
	}
	return out
}

type patch []fdiff.FilePatch

func (p patch) FilePatches() []fdiff.FilePatch { return p }
func (p patch) Message() string                { return "" }
