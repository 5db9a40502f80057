// Package idset holds a set of strings, each with a small tag, that the
// garbage collector never scans: a task remembers every call ID it has
// used for as long as it runs, so a set of them grows with the task, and a
// map of strings would hold a pointer for each, marked again at every
// collection. Here the index holds hashes and the strings' bytes live in
// chunks without pointers, so the collector's work does not grow with the
// set.
//
// Nor does a lookup or an add miss the cache more as the set grows. A
// string is looked up before it is added and is almost always new: a bloom
// filter, small enough to stay in cache, answers those lookups. And the
// index is a small map of the latest strings, merged now and then into
// a sorted array, so that an add writes into memory in cache rather than
// at a random place in a table that has outgrown it.
package idset

import (
	"cmp"
	"hash/maphash"
	"slices"
	"unsafe"
)

// Set is a set of strings, each with a tag. The zero value is empty and
// ready to use. A Set is not safe for concurrent use, and must not be
// copied once used: a copy would share its chunks and write over them.
type Set struct {
	_    noCopy
	seed maphash.Seed
	// The index, by the string's hash: the latest strings in recent, the
	// others in sorted, which recent is merged into once it holds a
	// sixteenth as many (merge).
	recent  map[uint64]slot
	sorted  []entry
	scratch []entry // merge's
	// bloom has two bits set for every hash in the index, at 16 bits a
	// string, so that looking up a string the set does not hold seldom
	// touches the index.
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

// entry is one string of the sorted index.
type entry struct {
	h  uint64
	sl slot
}

// minRecent is the most strings recent holds before a merge while the
// sorted index is small.
const minRecent = 256

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
	if sl, ok := s.find(h); ok && s.at(sl) == id {
		return sl.tag, true
	}
	tag, ok := s.spill[id]
	return tag, ok
}

// find looks hash h up in the index.
func (s *Set) find(h uint64) (slot, bool) {
	if sl, ok := s.recent[h]; ok {
		return sl, true
	}
	if i, ok := slices.BinarySearchFunc(s.sorted, h, byHash); ok {
		return s.sorted[i].sl, true
	}
	return slot{}, false
}

func byHash(e entry, h uint64) int { return cmp.Compare(e.h, h) }

// Add puts id in the set with tag and reports true, or reports false and
// changes nothing when id is already in it.
func (s *Set) Add(id string, tag uint8) bool {
	if s.recent == nil {
		s.seed = maphash.MakeSeed()
		s.recent = map[uint64]slot{}
	}
	h := maphash.String(s.seed, id)
	var sl slot
	taken := false
	if s.mayHave(h) {
		sl, taken = s.find(h)
		if taken && s.at(sl) == id {
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
		s.recent[h] = s.store(id, tag)
		s.mark(h)
		if len(s.recent) >= max(minRecent, len(s.sorted)/16) {
			s.merge()
		}
	}
	s.n++
	return true
}

// merge moves the recent strings into the sorted index: sorted among
// themselves, then merged from the back in place.
func (s *Set) merge() {
	add := s.scratch[:0]
	for h, sl := range s.recent {
		add = append(add, entry{h, sl})
	}
	slices.SortFunc(add, func(a, b entry) int { return cmp.Compare(a.h, b.h) })
	i, j := len(s.sorted)-1, len(add)-1
	s.sorted = slices.Grow(s.sorted, len(add))[:len(s.sorted)+len(add)]
	for k := len(s.sorted) - 1; j >= 0; k-- {
		if i >= 0 && s.sorted[i].h > add[j].h {
			s.sorted[k] = s.sorted[i]
			i--
		} else {
			s.sorted[k] = add[j]
			j--
		}
	}
	s.scratch = add[:0]
	clear(s.recent)
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
	if bits := len(s.bloom) * 64; bits < bitsPerString*(len(s.recent)+len(s.sorted)) {
		s.bloom = make([]uint64, max(16, 2*len(s.bloom)))
		for k := range s.recent {
			s.set(k)
		}
		for _, e := range s.sorted {
			s.set(e.h)
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

// at is the string sl locates, without a copy: only compared, never kept.
func (s *Set) at(sl slot) string {
	if sl.n == 0 {
		return ""
	}
	b := s.bytes[sl.chunk][sl.off : sl.off+sl.n]
	return unsafe.String(&b[0], len(b))
}

// noCopy makes go vet's copylocks check report a copied Set.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
