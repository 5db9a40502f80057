package fstools

import (
	"io/fs"
	"sync"
)

// RuleReserved is the rule of a denial of a file the host has reserved.
const RuleReserved = "builtin.reserved"

// Reserved is a set of files (by device and inode, so every name and hard
// link of one is the same) that the workspace tools never read, write,
// edit, list or search: the host's own live files inside the workspace,
// such as a trace being written. The zero value is empty; a nil *Reserved
// holds nothing. It is safe for concurrent use.
type Reserved struct {
	mu  sync.RWMutex
	ids map[fileKey]struct{}
}

type fileKey struct{ dev, ino uint64 }

// Add reserves the file fi describes (from Stat of the open file).
func (r *Reserved) Add(fi fs.FileInfo) {
	k, ok := keyOf(fi)
	if r == nil || !ok {
		return
	}
	r.mu.Lock()
	if r.ids == nil {
		r.ids = map[fileKey]struct{}{}
	}
	r.ids[k] = struct{}{}
	r.mu.Unlock()
}

// Has reports whether fi describes a reserved file.
func (r *Reserved) Has(fi fs.FileInfo) bool {
	if r == nil || r.empty() {
		return false
	}
	k, ok := keyOf(fi)
	if !ok {
		return false
	}
	r.mu.RLock()
	_, has := r.ids[k]
	r.mu.RUnlock()
	return has
}

func (r *Reserved) empty() bool {
	if r == nil {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.ids) == 0
}

// reservedDenied is the denial of a reserved file.
func (c *call) reservedDenied(rel string) error {
	return &DeniedError{Tool: c.id, Path: rel, Decision: builtinDenial(RuleReserved,
		"the host reserves this file (a live trace or another file it is writing); the workspace tools never read, write or list it")}
}
