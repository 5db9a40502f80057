// Package idset holds a set of strings, each with a small tag, that the
// garbage collector never scans: a task remembers every call ID it has
// used for as long as it runs, so a set of them grows with the task, and a
// map of strings would hold a pointer for each, marked again at every
// collection. Here the index holds hashes and the strings' bytes live in
// chunks without pointers, so the collector's work does not grow with the
// set. A bloom filter in front of the index answers most lookups of a
// string the set does not hold from memory that stays in cache.
package idset

import (
	"hash/maphash"
)

// Set is a set of strings, each with a tag. The zero value is empty and
// ready to use. A Set is not safe for concurrent use, and must not be
// copied once used: a copy would share its chunks and write over them.
type Set struct {
	_     noCopy
	seed  maphash.Seed
	index map[uint64]slot // by the string's hash
	// bloom has two bits set for every hash in index, at 16 bits a string:
	// small enough to stay in cache as index grows out of it, so that
	// looking up a string the set does not hold, the usual case (a new
	// call ID), seldom touches index.
	bloom []uint64
	bytes [][]byte // the strings, in chunks that never move
	fill  int      // bytes used in the last chunk
	// spill holds the rare string whose hash an earlier one already has.
	spill map[string]uint8
	n     int
}

// slot is where a string's bytes are: n bytes at off in bytes[chunk].
type slot struct {
	chunk, off, n uint32
	tag           uint8
}

// Chunks grow from minChunk to maxChunk bytes; a longer string gets a chunk
// of its own.
const (
	minChunk = 256
	maxChunk = 64 << 10
)

// Len is the number of strings in the set.
func (s *Set) Len() int { return s.n }

// Has reports whether id is in the set.
func (s *Set) Has(id string) bool {
	_, ok := s.Tag(id)
	return ok
}

// Tag returns id's tag, and whether id is in the set.
func (s *Set) Tag(id string) (uint8, bool) {
	if s.n == 0 {
		return 0, false
	}
	h := maphash.String(s.seed, id)
	if !s.mayHave(h) {
		return 0, false
	}
	if sl, ok := s.index[h]; ok && s.holds(sl, id) {
		return sl.tag, true
	}
	tag, ok := s.spill[id]
	return tag, ok
}

// Add puts id in the set with tag and reports true, or reports false and
// changes nothing when id is already in it.
func (s *Set) Add(id string, tag uint8) bool {
	if s.index == nil {
		s.seed = maphash.MakeSeed()
		s.index = map[uint64]slot{}
	}
	h := maphash.String(s.seed, id)
	var sl slot
	taken := false
	if s.mayHave(h) {
		sl, taken = s.index[h]
		if taken && s.holds(sl, id) {
			return false
		}
		if _, ok := s.spill[id]; ok {
			return false
		}
	}
	if taken {
		if s.spill == nil {
			s.spill = map[string]uint8{}
		}
		s.spill[id] = tag
	} else {
		s.index[h] = s.store(id, tag)
		s.mark(h)
	}
	s.n++
	return true
}

// bitsPerString is the bloom filter's size: two bits of 16 a string set
// make a false positive about one lookup in 70.
const bitsPerString = 16

// mayHave reports whether a string of hash h may be in the set: false
// means it is not.
func (s *Set) mayHave(h uint64) bool {
	m := uint64(len(s.bloom))*64 - 1
	a, b := h&m, (h>>32)&m
	return len(s.bloom) > 0 && s.bloom[a/64]&(1<<(a%64)) != 0 && s.bloom[b/64]&(1<<(b%64)) != 0
}

// mark adds hash h to the bloom filter, which doubles, rebuilt from the
// index, when the set outgrows it.
func (s *Set) mark(h uint64) {
	if bits := len(s.bloom) * 64; bits < bitsPerString*len(s.index) {
		s.bloom = make([]uint64, max(16, 2*len(s.bloom)))
		for k := range s.index {
			s.set(k)
		}
	}
	s.set(h)
}

func (s *Set) set(h uint64) {
	m := uint64(len(s.bloom))*64 - 1
	a, b := h&m, (h>>32)&m
	s.bloom[a/64] |= 1 << (a % 64)
	s.bloom[b/64] |= 1 << (b % 64)
}

// store copies id into the chunks.
func (s *Set) store(id string, tag uint8) slot {
	k := len(s.bytes) - 1
	if k < 0 || len(s.bytes[k])-s.fill < len(id) {
		size := minChunk
		if k >= 0 {
			size = min(2*len(s.bytes[k]), maxChunk)
		}
		s.bytes = append(s.bytes, make([]byte, max(size, len(id))))
		k, s.fill = k+1, 0
	}
	sl := slot{chunk: uint32(k), off: uint32(s.fill), n: uint32(len(id)), tag: tag}
	s.fill += copy(s.bytes[k][s.fill:], id)
	return sl
}

// holds reports whether sl locates id's bytes. The conversion in the
// comparison does not copy: the compiler compares the bytes in place.
func (s *Set) holds(sl slot, id string) bool {
	return string(s.bytes[sl.chunk][sl.off:sl.off+sl.n]) == id
}

// noCopy makes go vet's copylocks check report a copied Set.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
