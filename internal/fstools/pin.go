package fstools

import (
	"fmt"
	"sync"

	"github.com/pabloagent/pablo/internal/textx"
)

// Pin binds an agent's reads of one workspace file to one revision: a file
// it was handed (an artifact handoff) at the revision verified when it
// started. The seeds promise the recheck "immediately before downstream
// use", so the check is not only made at the start: every fs.read and
// fs.search of the path hashes the very bytes it read and returns them
// only when they are that revision, and fs.edit, which builds on them,
// edits only that revision; otherwise the call fails with
// artifact_changed, naming the path and both revisions. There is no gap
// between the check and the use: what is returned is what was hashed.
type Pin struct {
	// Path is the workspace-relative path of the file.
	Path string
	// Revision is the lowercase hex SHA-256 of the bytes it was handed at.
	Revision string
}

// pins are an agent's pinned paths, by their checked relative form. The
// agent's own committed fs.write or fs.edit of a pinned path moves its pin
// to the revision it installed: those bytes are its own, not a swap.
type pins struct {
	mu sync.Mutex
	m  map[string]string
}

// revision is the revision rel is pinned to, if it is pinned.
func (p *pins) revision(rel string) (string, bool) {
	if p == nil {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rev, ok := p.m[rel]
	return rev, ok
}

// move re-pins rel, when it is pinned, to rev.
func (p *pins) move(rel, rev string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[rel]; ok {
		p.m[rel] = rev
	}
}

// WithPins returns a copy of t, for one agent, whose reads of each pinned
// path are bound to the pin's revision (see [Pin]). t itself is unchanged.
// A pin whose path is not a workspace file path or whose revision is not
// 64 lowercase hex digits is refused; two pins of one path must agree.
func (t *Tools) WithPins(list []Pin) (*Tools, error) {
	p := &pins{m: make(map[string]string, len(list))}
	for _, pin := range list {
		rel, parts, perr := lexicalPath(t.ws.dir, pin.Path)
		if perr != nil || len(parts) == 0 {
			return nil, fmt.Errorf("fstools: pin %q: not a workspace-relative file path", textx.Shorten(pin.Path, 256))
		}
		if !ValidRevision(pin.Revision) {
			return nil, fmt.Errorf("fstools: pin %q: the revision must be 64 lowercase hex digits, as fs.read gives it", textx.Shorten(pin.Path, 256))
		}
		if prev, ok := p.m[rel]; ok && prev != pin.Revision {
			return nil, fmt.Errorf("fstools: pin %q: pinned at two revisions (%s and %s)", rel, prev, pin.Revision)
		}
		p.m[rel] = pin.Revision
	}
	out := *t
	out.pins = p
	return &out, nil
}

// checkPin fails with artifact_changed when rel is pinned and data, the
// bytes just read of it, are not the pinned revision.
func (c *call) checkPin(rel string, data []byte) error {
	handed, ok := c.t.pins.revision(rel)
	if !ok {
		return nil
	}
	if cur := Revision(data); cur != handed {
		return &Error{Tool: c.id, Code: ArtifactChanged, Path: rel, Handed: handed, Current: cur,
			Detail: "the file was handed to this agent at revision " + handed + ", but its bytes are now revision " + cur +
				"; nothing of them is returned: ask the parent for a new handoff of the file"}
	}
	return nil
}
