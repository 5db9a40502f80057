package schema

import (
	"strings"
)

// resolveRefs binds every "$ref" to its target. Only local JSON pointers
// into the root "$defs" are accepted, written as plain ASCII fragment
// characters: no percent-encoding, no other base, no anchors.
func (c *compiler) resolveRefs() *CompileError {
	for _, n := range c.refs {
		ref := n.refText
		if !strings.HasPrefix(ref, "#") {
			return unsupported(n.path, "$ref", "only local references are supported; write \"#/$defs/NAME\" instead of "+quoteShort(ref))
		}
		frag := ref[1:]
		if strings.ContainsRune(frag, '%') {
			return unsupported(n.path, "$ref", "percent-encoded references are not supported; name the $defs entry with plain characters")
		}
		for i := 0; i < len(frag); i++ {
			if !isFragmentChar(frag[i]) {
				return unsupported(n.path, "$ref", "the reference fragment may only hold URI fragment characters; rename the $defs entry")
			}
		}
		if !strings.HasPrefix(frag, "/$defs/") {
			return unsupported(n.path, "$ref", "only JSON-pointer references into the root \"$defs\" are supported, like \"#/$defs/NAME\"")
		}
		if !validPointer(frag) {
			return unsupported(n.path, "$ref", "the reference is not a valid JSON pointer (\"~\" must be followed by 0 or 1)")
		}
		target, ok := c.byPath[frag]
		if !ok {
			return invalid(n.path, "$ref", "the reference "+quoteShort(ref)+" does not name a subschema in this document")
		}
		n.ref = target
	}
	return nil
}

// isFragmentChar reports whether c may appear unescaped in a URI fragment
// (RFC 3986 pchar, "/" and "?", without percent-encoding).
func isFragmentChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0
}

func validPointer(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 >= len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}

func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return "\"" + strings.ToValidUTF8(s, "?") + "\""
}

// applied calls f for every subschema that n applies to some instance:
// every child except "$defs" entries, plus the "$ref" target.
func (n *node) applied(f func(*node) bool) bool {
	for _, p := range n.properties {
		if !f(p.node) {
			return false
		}
	}
	for _, p := range n.dependentSchemas {
		if !f(p.node) {
			return false
		}
	}
	for _, list := range [][]*node{n.prefixItems, n.allOf, n.anyOf, n.oneOf} {
		for _, s := range list {
			if !f(s) {
				return false
			}
		}
	}
	for _, s := range []*node{n.additional, n.propertyNames, n.items, n.not, n.ifS, n.thenS, n.els, n.ref} {
		if s != nil && !f(s) {
			return false
		}
	}
	return true
}

// checkCycles rejects any "$ref" cycle, including one among $defs entries
// that the root never reaches.
func (c *compiler) checkCycles() *CompileError {
	const (
		white = iota
		grey
		black
	)
	color := make(map[*node]int, len(c.byPath))
	var cyc *node
	var visit func(n *node) bool
	visit = func(n *node) bool {
		switch color[n] {
		case grey:
			return false
		case black:
			return true
		}
		color[n] = grey
		ok := n.applied(func(s *node) bool {
			if !visit(s) {
				if cyc == nil {
					cyc = n
				}
				return false
			}
			return true
		})
		color[n] = black
		return ok
	}
	for _, n := range c.refs {
		if !visit(n) {
			at := n
			if cyc != nil && cyc.ref != nil {
				at = cyc
			}
			return unsupported(at.path, "$ref", "reference cycles are not supported; the schema must not refer back to itself")
		}
	}
	return nil
}

// expand returns the number of subschema visits and the comparison payload
// bytes of n with every "$ref" expanded, saturating just past limit visits.
func (c *compiler) expand(n *node, limit int) (int, uint64) {
	if c.memo == nil {
		c.memo = make(map[*node][2]uint64)
	}
	var walk func(n *node) (uint64, uint64)
	walk = func(n *node) (uint64, uint64) {
		if m, ok := c.memo[n]; ok {
			return m[0], m[1]
		}
		visits, payload := uint64(1), n.payload
		n.applied(func(s *node) bool {
			v, p := walk(s)
			visits = min(satAdd(visits, v), uint64(limit)+1)
			payload = satAdd(payload, p)
			return true
		})
		c.memo[n] = [2]uint64{visits, payload}
		return visits, payload
	}
	v, p := walk(n)
	return int(v), p
}
