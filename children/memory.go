package children

import (
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/internal/textx"
)

// MemoryScope is the part of the memory (seed 002's memory tools) an agent
// reaches: record kinds and repository paths, as a memory grant names
// them ("*" for all; a path is a directory prefix ending in "/" or a file
// or directory path). A child's memory scope bounds every memory tool it
// inherits: each tool's grant is cut down to it, never widened.
type MemoryScope struct {
	Kinds []string `json:"kinds"`
	Paths []string `json:"paths"`
}

// narrowMemory returns a child's memory scope under the parent's: nil
// inherits the parent's; each list the request names keeps exactly what it
// names, each entry of which the parent's list must cover (a kind it has,
// a path inside one of its paths); a nil list inherits. A parent without
// memory tools (nil) can pass no memory scope on.
func narrowMemory(parent, request *MemoryScope) (*MemoryScope, error) {
	const field = "capabilities.memory"
	if request == nil {
		if parent == nil {
			return nil, nil
		}
		return &MemoryScope{Kinds: slices.Clone(parent.Kinds), Paths: slices.Clone(parent.Paths)}, nil
	}
	if parent == nil {
		return nil, errorf(CodeNotInherited, field, "you have no memory tools, so a child cannot have a memory scope")
	}
	out := &MemoryScope{Kinds: slices.Clone(parent.Kinds), Paths: slices.Clone(parent.Paths)}
	if request.Kinds != nil {
		for _, k := range request.Kinds {
			if !slices.Contains(parent.Kinds, "*") && !slices.Contains(parent.Kinds, k) {
				return nil, errorf(CodeNotInherited, field+".kinds", "kind %q is not in your memory scope: a child can only keep kinds you have", textx.Shorten(k, 80))
			}
		}
		out.Kinds = slices.Clone(request.Kinds)
	}
	if request.Paths != nil {
		for _, p := range request.Paths {
			if !cleanMemoryPath(p) {
				return nil, errorf(CodeOutOfRange, field+".paths", "path %q must be \"*\" or a relative slash-separated path without \"..\"", textx.Shorten(p, 80))
			}
			if !slices.ContainsFunc(parent.Paths, func(q string) bool { return memoryPathCovers(q, p) }) {
				return nil, errorf(CodeNotInherited, field+".paths", "path %q is not inside your memory scope: a child can only keep paths you have, or paths under them", textx.Shorten(p, 80))
			}
		}
		out.Paths = slices.Clone(request.Paths)
	}
	return out, nil
}

// cleanMemoryPath reports whether p is "*" or a clean relative
// slash-separated path (a trailing "/" marks a directory).
func cleanMemoryPath(p string) bool {
	if p == "*" {
		return true
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return false
	}
	trimmed := strings.TrimSuffix(p, "/")
	return trimmed != "" && path.Clean(trimmed) == trimmed && !slices.Contains(strings.Split(trimmed, "/"), "..")
}

// memoryPathCovers reports whether every repository path scope entry b
// allows, entry a allows too. An entry ending in "/" allows the paths
// under it; one without allows itself and the paths under it.
func memoryPathCovers(a, b string) bool {
	switch {
	case a == "*":
		return true
	case b == "*":
		return false
	}
	bd := strings.TrimSuffix(b, "/")
	if ad, dir := strings.CutSuffix(a, "/"); dir {
		return strings.HasPrefix(bd, ad+"/") || (bd == ad && strings.HasSuffix(b, "/"))
	}
	return bd == a || strings.HasPrefix(bd, a+"/")
}

// parseMemoryScope decodes capabilities.memory: {"kinds": [...],
// "paths": [...]}, each list null or absent to inherit.
func parseMemoryScope(at string, raw json.RawMessage) (*MemoryScope, error) {
	obj, err := object(at, raw)
	if err != nil {
		return nil, err
	}
	if err := only(at, obj, "kinds", "paths"); err != nil {
		return nil, err
	}
	m := &MemoryScope{}
	for k, dst := range map[string]*[]string{"kinds": &m.Kinds, "paths": &m.Paths} {
		v, ok := obj[k]
		if !ok || isNull(v) {
			continue
		}
		if *dst, err = stringList(at+"/"+k, v, true); err != nil {
			return nil, err
		}
	}
	return m, nil
}
