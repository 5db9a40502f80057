package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Pre-scan bounds. go-toml's decoder checks every key against the keys
// seen before it by a linear search, so its time grows with the square of
// the keys (a 1 MiB file of 149,000 empty tables cost 54 s of CPU), and it
// walks a dotted key or a table header in time that grows with the square
// of its parts (a 100 KB key a.a.a….b cost 5 s, a header [a.a.a….b] 10 s).
// The pre-scan counts the document's keys with hashing, in one pass of the
// linear-time unstable parser, and refuses (config_limit) a document that
// holds more than the schema can ever accept before the decoder sees it:
//   - more than maxNodes values in all (the resolver's bound, §1.4);
//   - more than maxTableKeys keys in one table: no table of the schema has
//     more fields, and no map of it more entries (TestPrescanBoundsCoverTheSchema);
//   - more than maxArray elements in one array or array of tables: no list
//     of the schema is longer;
//   - a value nested deeper than maxNesting levels, counting every part of
//     a dotted key or table header and every inline table or array around
//     it (the resolver's bound, §1.4, which the decoded tree is held to);
//   - a key whose path, its table's name and every dotted part included,
//     is longer than maxKeyBytes bytes: no path of the schema comes near
//     (its longest names are 256-byte resource attribute keys).
//
// Every key and element it counts is a distinct value of the decoded tree,
// so it never refuses a document the decoder and the schema would accept.
// Its own work is linear in the document: it interns each path as the
// number of its parent and its last part, so a part is hashed once, never
// with the path in front of it.
//
// And it bounds the decoder's work itself: it replays the decoder's key
// lookups on its own index (each lookup scans the entries created after
// the parent until the match, or to the end) and refuses a document whose
// lookups would scan more than maxDecodeWork entries, about a third of a
// second of decoding here. Only a document that nests thousands of tables
// deep under many parents (tens of profiles each with every map full) comes
// near it, and such a document loads when split into imports, each of which
// is decoded on its own.
const (
	maxTableKeys  = 256
	maxDecodeWork = 1 << 26
	maxKeyBytes   = 1024
)

// prescan counts a document's keys, tables and array elements. It returns
// the number of expressions it read and the first bound passed, with the
// line where it was passed. A syntax error is left to the decoder: the
// scan stops and accepts.
func prescan(text []byte) (steps int, err *Error) {
	steps, _, err = prescanWork(text)
	return steps, err
}

// prescanWork is prescan that also returns its own work: the key parts
// and array elements it visited and the bytes of key it hashed.
func prescanWork(text []byte) (steps int, work int64, err *Error) {
	s := &scanState{ids: map[scanKey]int32{}, nodes: []scanNode{{name: "", elem: -1}}, entries: 1}
	var p unstable.Parser
	p.Reset(text)
	table := int32(0)
	for p.NextExpression() {
		steps++
		e := p.Expression()
		var ok bool
		switch e.Kind {
		case unstable.Table:
			table, ok = s.header(e.Key(), false)
		case unstable.ArrayTable:
			table, ok = s.header(e.Key(), true)
		case unstable.KeyValue:
			var at int32
			if at, ok = s.key(table, e.Key()); ok {
				ok = s.value(at, e.Value())
			}
		default:
			ok = true
		}
		if !ok {
			line := 0
			if it := e.Key(); it.Next() && it.Node().Raw.Length > 0 {
				line = 1 + countLines(text[:it.Node().Raw.Offset])
			}
			return steps, s.visited, &Error{Code: CodeLimit, Line: line, Message: s.why}
		}
	}
	return steps, s.visited, nil
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// scanKey names one path: its parent's number and its last part, a key
// (elem < 0) or an element of an array.
type scanKey struct {
	parent int32
	elem   int32
	name   string
}

// scanNode is one path the pre-scan has seen.
type scanNode struct {
	parent int32
	elem   int32 // the element's index; -1 for a key
	name   string
	order  int32 // its place among the decoder's entries; 0 for an element
	depth  int32 // levels of nesting below the document
	bytes  int32 // the path's length: every part and a separator each
	keys   int32 // distinct keys and elements under it
	array  int32 // elements of an array of tables at it
	isArr  bool  // it is an array of tables
}

// scanState is what a pre-scan has counted.
type scanState struct {
	ids     map[scanKey]int32
	nodes   []scanNode // node 0 is the document
	entries int32      // the decoder's entries (key paths) so far
	values  int
	work    int64 // the decoder's lookup steps so far (an upper bound)
	visited int64 // the pre-scan's own steps
	why     string
}

// child returns the node of a key (elem < 0) or an element under parent,
// counting it once.
func (s *scanState) child(parent int32, name string, elem int32) (int32, bool) {
	s.visited += 1 + int64(len(name))
	k := scanKey{parent: parent, elem: elem, name: name}
	from := s.nodes[parent].order
	if id, ok := s.ids[k]; ok {
		if elem < 0 {
			return id, s.charge(int64(s.nodes[id].order - from))
		}
		return id, true
	}
	pn := s.nodes[parent]
	n := scanNode{parent: parent, elem: elem, name: name, depth: pn.depth + 1}
	if elem < 0 {
		if !s.charge(int64(s.entries - from)) {
			return 0, false
		}
		n.order = s.entries
		s.entries++
		n.bytes = pn.bytes + 1 + int32(min(len(name), maxKeyBytes+1))
	} else {
		n.bytes = pn.bytes + 1 + int32(len(strconv.Itoa(int(elem))))
	}
	id := int32(len(s.nodes))
	s.nodes = append(s.nodes, n)
	s.ids[k] = id
	switch {
	case n.depth > maxNesting:
		s.why = fmt.Sprintf("%s nests deeper than %d levels (the limit of nesting, counting each part of a dotted key or table name and each inline table or array); no deployment nests that deep", s.show(id), maxNesting)
		return 0, false
	case n.bytes > maxKeyBytes:
		s.why = fmt.Sprintf("the key %s is longer than %d bytes (the limit of a key's path, its table's name and each dotted part included); no key of a deployment is that long", s.show(id), maxKeyBytes)
		return 0, false
	}
	if elem < 0 {
		s.nodes[parent].keys++
		if s.nodes[parent].keys > maxTableKeys {
			s.why = fmt.Sprintf("more than %d keys in one table (at %s); no table of a deployment holds that many", maxTableKeys, s.show(parent))
			return 0, false
		}
	}
	return id, s.node()
}

// show is the path of node id as a diagnostic quotes it: a dotted key,
// shortened.
func (s *scanState) show(id int32) string {
	if id == 0 {
		return "the top level"
	}
	var parts []string
	for n := id; n != 0; n = s.nodes[n].parent {
		if s.nodes[n].elem >= 0 {
			parts = append(parts, "["+strconv.Itoa(int(s.nodes[n].elem))+"]")
			continue
		}
		parts = append(parts, textx.Shorten(s.nodes[n].name, 32))
		if len(parts) > 8 {
			parts = append(parts, "…")
			break
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		if b.Len() > 0 && !strings.HasPrefix(parts[i], "[") {
			b.WriteByte('.')
		}
		b.WriteString(parts[i])
	}
	return strconv.Quote(b.String())
}

// charge adds n lookup steps of the decoder.
func (s *scanState) charge(n int64) bool {
	s.work += n
	if s.work > maxDecodeWork {
		s.why = fmt.Sprintf("the document would cost the TOML decoder more than %d lookup steps (it holds too many tables under too many parents); split it into imports", maxDecodeWork)
		return false
	}
	return true
}

func (s *scanState) node() bool {
	s.values++
	if s.values > maxNodes {
		s.why = fmt.Sprintf("more than %d values", maxNodes)
		return false
	}
	return true
}

// header walks a [table] or [[array]] header from the root and returns the
// table its keys go into.
func (s *scanState) header(it unstable.Iterator, array bool) (int32, bool) {
	cur := int32(0)
	for it.Next() {
		id, ok := s.child(cur, string(it.Node().Data), -1)
		if !ok {
			return 0, false
		}
		n := &s.nodes[id]
		switch {
		case it.IsLast() && array:
			// The decoder forgets the previous element's keys, a pass
			// over all of its entries.
			if n.isArr && !s.charge(int64(s.entries)) {
				return 0, false
			}
			n.isArr = true
			n.array++
			if n.array > maxArray {
				s.why = fmt.Sprintf("more than %d elements in one array (at %s)", maxArray, s.show(id))
				return 0, false
			}
			if cur, ok = s.child(id, "", n.array-1); !ok {
				return 0, false
			}
		case n.isArr:
			// [a.b] after [[a]] belongs to a's latest element.
			if cur, ok = s.child(id, "", n.array-1); !ok {
				return 0, false
			}
		default:
			cur = id
		}
	}
	return cur, true
}

// key walks a dotted key under table and returns its node.
func (s *scanState) key(table int32, it unstable.Iterator) (int32, bool) {
	cur := table
	for it.Next() {
		var ok bool
		if cur, ok = s.child(cur, string(it.Node().Data), -1); !ok {
			return 0, false
		}
	}
	return cur, true
}

// value counts the keys of an inline table and the elements of an array.
func (s *scanState) value(at int32, n *unstable.Node) bool {
	switch n.Kind {
	case unstable.InlineTable:
		it := n.Children()
		for it.Next() {
			kv := it.Node()
			p, ok := s.key(at, kv.Key())
			if !ok || !s.value(p, kv.Value()) {
				return false
			}
		}
	case unstable.Array:
		it := n.Children()
		for i := int32(0); it.Next(); i++ {
			if i >= maxArray {
				s.why = fmt.Sprintf("more than %d elements in one array (at %s)", maxArray, s.show(at))
				return false
			}
			e, ok := s.child(at, "", i)
			if !ok || !s.value(e, it.Node()) {
				return false
			}
		}
	}
	return true
}
