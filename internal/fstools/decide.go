package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/pabloagent/pablo/authority"
)

// Decide is the policy part of Call, without reading, listing or writing
// anything: for the path a call of id names, the workspace confinement
// (lexical, then no symbolic link along the path), the agent's read and
// write roots, and whether writing is enabled. It returns the decision
// that decides the call: the denial, or the allowed decision over the path.
// It fails, as Call would, when the arguments name no path to check; a
// path that does not exist is no policy matter, and is allowed here for
// Call to report.
//
// Call makes the same checks again as it walks the path, so a path that
// changes between Decide and Call is still caught.
func (t *Tools) Decide(ctx context.Context, id authority.ID, args json.RawMessage) (authority.Decision, error) {
	if !t.has(id) {
		return authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable,
			Reason: string(id) + " is not one of this agent's workspace tools"}, nil
	}
	var a struct {
		Path             string  `json:"path"`
		ExpectedRevision *string `json:"expected_revision"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return authority.Decision{}, &ArgumentError{Tool: id, Field: "", Reason: "arguments must be a JSON object"}
	}
	c := t.begin(ctx, id)
	kinds := []authority.ResourceKind{authority.ResourceRead}
	switch id {
	case authority.FSWrite:
		kinds = []authority.ResourceKind{authority.ResourceWrite}
		if a.ExpectedRevision != nil {
			kinds = append(kinds, authority.ResourceRead)
		}
	case authority.FSEdit:
		kinds = []authority.ResourceKind{authority.ResourceWrite, authority.ResourceRead}
	}
	if id == authority.FSWrite || id == authority.FSEdit {
		if err := c.writable(); err != nil {
			return denialOf(err)
		}
	}
	rel, _, d, err := c.checkDecided(a.Path, kinds...)
	if err != nil {
		return denialOf(err)
	}
	if c.symlinkAlong(rel) {
		return c.symlinkDenied(rel).(*DeniedError).Decision, nil
	}
	return d, nil
}

// symlinkAlong reports whether a component of rel, a checked relative
// path, is a symbolic link. It inspects each leading path with Lstat and
// stops at the first that is missing or not a directory: Call reports
// those.
func (c *call) symlinkAlong(rel string) bool {
	if rel == "." {
		return false
	}
	for end := 0; end < len(rel); {
		next := strings.IndexByte(rel[end+1:], '/')
		if next < 0 {
			end = len(rel)
		} else {
			end += 1 + next
		}
		fi, err := c.t.ws.root.Lstat(rel[:end])
		switch {
		case err != nil:
			return errors.Is(err, syscall.ELOOP)
		case fi.Mode()&fs.ModeSymlink != 0:
			return true
		case !fi.IsDir():
			return false
		}
	}
	return false
}

// denialOf is the decision of a *DeniedError, or err itself.
func denialOf(err error) (authority.Decision, error) {
	var de *DeniedError
	if errors.As(err, &de) {
		return de.Decision, nil
	}
	return authority.Decision{}, err
}
