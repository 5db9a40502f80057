package config

import (
	"fmt"
	"strconv"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Pre-scan bounds. go-toml's decoder checks every key against the keys
// seen before it by a linear search, so its time grows with the square of
// the keys (a 1 MiB file of 149,000 empty tables cost 54 s of CPU). The
// pre-scan counts the document's keys with hashing, in one pass of the
// linear-time unstable parser, and refuses (config_limit) a document that
// holds more than the schema can ever accept before the decoder sees it:
//   - more than maxNodes values in all (the resolver's bound, §1.4);
//   - more than maxTableKeys keys in one table: no table of the schema has
//     more fields, and no map of it more entries (TestPrescanBoundsCoverTheSchema);
//   - more than maxArray elements in one array or array of tables: no list
//     of the schema is longer.
//
// Every key and element it counts is a distinct value of the decoded tree,
// so it never refuses a document the decoder and the schema would accept.
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
)

// prescan counts a document's keys, tables and array elements. It returns
// the number of expressions it read (its work) and the first bound passed,
// with the line where it was passed. A syntax error is left to the decoder:
// the scan stops and accepts.
func prescan(text []byte) (steps int, err *Error) {
	s := &scanState{seen: map[string]int{"": 0}, keys: map[string]int{}, arrays: map[string]int{}}
	var p unstable.Parser
	p.Reset(text)
	table := ""
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
			var path string
			if path, ok = s.key(table, e.Key()); ok {
				ok = s.value(path, e.Value())
			}
		default:
			ok = true
		}
		if !ok {
			line := 0
			if it := e.Key(); it.Next() && it.Node().Raw.Length > 0 {
				line = 1 + countLines(text[:it.Node().Raw.Offset])
			}
			return steps, &Error{Code: CodeLimit, Line: line, Message: s.why}
		}
	}
	return steps, nil
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

// scanState is what a pre-scan has counted.
type scanState struct {
	seen   map[string]int // every key path → the order it was created in
	keys   map[string]int // table path → its distinct keys
	arrays map[string]int // array-of-tables path → its elements
	nodes  int
	work   int64 // the decoder's lookup steps so far (an upper bound)
	why    string
}

// add counts key under parent once and returns its path.
func (s *scanState) add(parent, key string) (string, bool) {
	path := parent + pointer(key)
	from := s.seen[parent]
	if at, ok := s.seen[path]; ok {
		return path, s.charge(int64(at - from))
	}
	if !s.charge(int64(len(s.seen) - from)) {
		return path, false
	}
	s.seen[path] = len(s.seen)
	s.keys[parent]++
	if s.keys[parent] > maxTableKeys {
		s.why = fmt.Sprintf("more than %d keys in one table (at %s); no table of a deployment holds that many", maxTableKeys, orRoot(parent))
		return path, false
	}
	return path, s.node()
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
	s.nodes++
	if s.nodes > maxNodes {
		s.why = fmt.Sprintf("more than %d values", maxNodes)
		return false
	}
	return true
}

func orRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

// header walks a [table] or [[array]] header from the root and returns the
// table its keys go into.
func (s *scanState) header(it unstable.Iterator, array bool) (string, bool) {
	cur := ""
	for it.Next() {
		path, ok := s.add(cur, string(it.Node().Data))
		if !ok {
			return "", false
		}
		n, isArray := s.arrays[path]
		switch {
		case it.IsLast() && array:
			// The decoder forgets the previous element's keys, a pass
			// over all of its entries.
			if isArray && !s.charge(int64(len(s.seen))) {
				return "", false
			}
			s.arrays[path] = n + 1
			if n+1 > maxArray {
				s.why = fmt.Sprintf("more than %d elements in one array (at %s)", maxArray, path)
				return "", false
			}
			if !s.node() {
				return "", false
			}
			cur = path + "/" + strconv.Itoa(n)
		case isArray:
			// [a.b] after [[a]] belongs to a's latest element.
			cur = path + "/" + strconv.Itoa(n-1)
		default:
			cur = path
		}
	}
	return cur, true
}

// key walks a dotted key under table and returns the path of its value.
func (s *scanState) key(table string, it unstable.Iterator) (string, bool) {
	cur := table
	for it.Next() {
		var ok bool
		if cur, ok = s.add(cur, string(it.Node().Data)); !ok {
			return "", false
		}
	}
	return cur, true
}

// value counts the keys of an inline table and the elements of an array.
func (s *scanState) value(path string, n *unstable.Node) bool {
	switch n.Kind {
	case unstable.InlineTable:
		it := n.Children()
		for it.Next() {
			kv := it.Node()
			p, ok := s.key(path, kv.Key())
			if !ok || !s.value(p, kv.Value()) {
				return false
			}
		}
	case unstable.Array:
		it := n.Children()
		for i := 0; it.Next(); i++ {
			if i >= maxArray {
				s.why = fmt.Sprintf("more than %d elements in one array (at %s)", maxArray, path)
				return false
			}
			if !s.node() || !s.value(path+"/"+strconv.Itoa(i), it.Node()) {
				return false
			}
		}
	}
	return true
}
