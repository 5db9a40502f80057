package fstools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
)

// WriteResult is the payload of fs.write and fs.edit.
type WriteResult struct {
	Path string `json:"path"`
	// Revision is the new content's revision.
	Revision  string `json:"revision"`
	SizeBytes int64  `json:"size_bytes"`
	// Created is true when the file did not exist before.
	Created bool `json:"created"`
	// Committed is always true in a returned result: the new content is
	// installed, even if the run later settles as cancelled.
	Committed bool `json:"committed"`
}

// ValidRevision reports whether s is a revision: 64 lowercase hex digits.
func ValidRevision(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Write runs fs.write: create a file (ExpectedRevision nil) or replace one
// whose current revision is *ExpectedRevision.
func (t *Tools) Write(ctx context.Context, a WriteArgs) (*WriteResult, error) {
	c := t.begin(ctx, authority.FSWrite)
	if err := c.writable(); err != nil {
		return nil, err
	}
	if a.ExpectedRevision != nil && !ValidRevision(*a.ExpectedRevision) {
		return nil, &ArgumentError{Tool: c.id, Field: "expected_revision", Reason: "must be null (create only) or 64 lowercase hex digits from fs.read"}
	}
	if !utf8.ValidString(a.Text) {
		return nil, &ArgumentError{Tool: c.id, Field: "text", Reason: "must be valid UTF-8"}
	}
	kinds := []authority.ResourceKind{authority.ResourceWrite}
	if a.ExpectedRevision != nil {
		kinds = append(kinds, authority.ResourceRead)
	}
	return c.mutate(a.Path, a.ExpectedRevision, kinds, func(rel string, _ []byte) ([]byte, error) {
		return []byte(a.Text), nil
	})
}

// Edit runs fs.edit: replace the one occurrence of OldText with NewText in a
// file whose current revision is ExpectedRevision.
func (t *Tools) Edit(ctx context.Context, a EditArgs) (*WriteResult, error) {
	c := t.begin(ctx, authority.FSEdit)
	if err := c.writable(); err != nil {
		return nil, err
	}
	if !ValidRevision(a.ExpectedRevision) {
		return nil, &ArgumentError{Tool: c.id, Field: "expected_revision", Reason: "must be 64 lowercase hex digits from fs.read"}
	}
	if a.OldText == "" {
		return nil, &ArgumentError{Tool: c.id, Field: "old_text", Reason: "must not be empty"}
	}
	if !utf8.ValidString(a.OldText) || !utf8.ValidString(a.NewText) {
		return nil, &ArgumentError{Tool: c.id, Field: "new_text", Reason: "old_text and new_text must be valid UTF-8"}
	}
	expected := a.ExpectedRevision
	kinds := []authority.ResourceKind{authority.ResourceWrite, authority.ResourceRead}
	return c.mutate(a.Path, &expected, kinds, func(rel string, cur []byte) ([]byte, error) {
		// An edit builds on the current bytes: a file this agent was
		// handed is edited only at its handed revision, as it is read.
		if err := c.checkPin(rel, cur); err != nil {
			return nil, err
		}
		if !utf8.Valid(cur) {
			return nil, &Error{Tool: c.id, Code: UnsupportedEncoding, Path: rel, Detail: "the file is not UTF-8 text"}
		}
		old := []byte(a.OldText)
		i := bytes.Index(cur, old)
		if i < 0 {
			return nil, &Error{Tool: c.id, Code: MatchNotUnique, Path: rel, Detail: "old_text occurs 0 times; it must occur exactly once (re-read the file)"}
		}
		if bytes.Contains(cur[i+1:], old) {
			return nil, &Error{Tool: c.id, Code: MatchNotUnique, Path: rel, Detail: "old_text occurs more than once; include more surrounding text so it occurs exactly once"}
		}
		out := make([]byte, 0, len(cur)-len(old)+len(a.NewText))
		out = append(out, cur[:i]...)
		out = append(out, a.NewText...)
		return append(out, cur[i+len(old):]...), nil
	})
}

func (c *call) writable() error {
	if !c.t.write {
		return &DeniedError{Tool: c.id, Decision: authority.Decision{
			Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable,
			Reason: "writing is not enabled for this agent (filesystem.write)"}}
	}
	return c.alive()
}

// mutate is the install procedure shared by fs.write and fs.edit, run under
// the workspace's mutation gate: check, snapshot and compare the revision,
// build the new content, write a private temporary file beside the target,
// re-check revision, policy and cancellation, then install atomically.
func (c *call) mutate(path string, expected *string, kinds []authority.ResourceKind,
	transform func(rel string, cur []byte) ([]byte, error)) (*WriteResult, error) {
	rel, parts, err := c.check(path, kinds...)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, &Error{Tool: c.id, Code: NotFile, Path: rel, Detail: "the workspace itself is a directory; name a file"}
	}
	if err := c.repoCheck(rel, parts); err != nil {
		return nil, err
	}
	c.writing = true
	if err := c.t.ws.lock(c.ctx); err != nil {
		return nil, c.alive()
	}
	defer c.t.ws.unlock()

	tg, err := c.resolve(rel, parts, true)
	if err != nil {
		return nil, err
	}
	defer tg.close()
	var cur []byte
	perm := fs.FileMode(0o600)
	if expected == nil {
		if tg.exists {
			if !tg.info.Mode().IsRegular() {
				return nil, &Error{Tool: c.id, Code: NotFile, Path: rel, Detail: "the path exists and is " + describe(tg.info.Mode())}
			}
			return nil, &Error{Tool: c.id, Code: Conflict, Path: rel, Detail: "the file already exists; read it and pass its revision as expected_revision to replace it"}
		}
	} else {
		if cur, err = c.snapshot(tg); err != nil {
			return nil, err
		}
		if Revision(cur) != *expected {
			return nil, &Error{Tool: c.id, Code: Conflict, Path: rel, Detail: "the file's revision is not expected_revision; read it again"}
		}
		perm = tg.info.Mode().Perm()
	}
	data, err := transform(rel, cur)
	if err != nil {
		return nil, err
	}
	if max := c.t.limits.MaxFileBytes; max > 0 && int64(len(data)) > max {
		return nil, c.limit("limits.filesystem.max_file_bytes", max)
	}
	if err := c.alive(); err != nil {
		return nil, err
	}
	tmp, err := c.writeTemp(tg.parent, rel, data, perm)
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			tg.parent.Remove(tmp)
		}
	}()
	if h := c.t.hooks.beforeInstall; h != nil {
		h(rel)
	}
	// The re-check: cancellation, policy, then the revision of what is on
	// disk right now.
	if err := c.alive(); err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if d := c.t.decide(k, rel); !d.Allowed {
			return nil, &DeniedError{Tool: c.id, Path: rel, Decision: d}
		}
	}
	res := &WriteResult{Path: rel, Revision: Revision(data), SizeBytes: int64(len(data)), Created: expected == nil, Committed: true}
	if expected == nil {
		if err := tg.parent.Link(tmp, tg.name); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return nil, &Error{Tool: c.id, Code: Conflict, Path: rel, Detail: "the file was created by someone else meanwhile; read it and pass its revision"}
			}
			return nil, c.ioErr(rel, err)
		}
		committed = true
		c.t.pins.move(rel, res.Revision)
		if err := tg.parent.Remove(tmp); err != nil {
			return res, &CleanupError{Tool: c.id, Result: res, cause: err}
		}
		return res, nil
	}
	if err := c.recheck(tg, *expected); err != nil {
		return nil, err
	}
	if err := tg.parent.Rename(tmp, tg.name); err != nil {
		return nil, c.ioErr(rel, err)
	}
	committed = true
	// The agent's own commit, still under the gate: a file it was handed
	// is now pinned to what it wrote.
	c.t.pins.move(rel, res.Revision)
	return res, nil
}

// recheck re-reads the file right before install and compares its revision.
func (c *call) recheck(tg *target, expected string) error {
	fi, err := tg.parent.Lstat(tg.name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Error{Tool: c.id, Code: Conflict, Path: tg.rel, Detail: "the file was removed meanwhile; read the workspace again", cause: err}
		}
		return c.fsErr(tg.rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return c.symlinkDenied(tg.rel)
	}
	now := &target{rel: tg.rel, parent: tg.parent, name: tg.name, info: fi, exists: true}
	cur, err := c.snapshot(now)
	if err != nil {
		return err
	}
	if Revision(cur) != expected {
		return &Error{Tool: c.id, Code: Conflict, Path: tg.rel, Detail: "the file changed after it was checked; read it again"}
	}
	return nil
}

// writeTemp writes data to a new private file in dir and returns its name.
func (c *call) writeTemp(dir *os.Root, rel string, data []byte, perm fs.FileMode) (string, error) {
	var f *os.File
	var name string
	for attempt := 0; ; attempt++ {
		var rnd [12]byte
		rand.Read(rnd[:])
		name = ".pablo-tmp-" + hex.EncodeToString(rnd[:])
		var err error
		f, err = dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOCTTY, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 3 {
			return "", c.ioErr(rel, err)
		}
	}
	fail := func(err error) (string, error) {
		f.Close()
		dir.Remove(name)
		return "", c.ioErr(rel, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	for off := 0; off < len(data); {
		n := min(len(data)-off, readChunk)
		if _, err := f.Write(data[off : off+n]); err != nil {
			return fail(err)
		}
		off += n
		if err := c.alive(); err != nil {
			f.Close()
			dir.Remove(name)
			return "", err
		}
	}
	if err := f.Close(); err != nil {
		dir.Remove(name)
		return "", c.ioErr(rel, err)
	}
	return name, nil
}
