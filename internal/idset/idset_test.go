package idset

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSetHoldsEveryStringOnceWithItsTag(t *testing.T) {
	var s Set
	if s.Has("a") || s.Len() != 0 {
		t.Fatal("the zero set is not empty")
	}
	long := strings.Repeat("x", maxChunk+10)
	ids := []string{"", "a", "call_1_0", long}
	for i := range 5000 {
		ids = append(ids, fmt.Sprintf("c%d", i))
	}
	for i, id := range ids {
		if !s.Add(id, uint8(i)) {
			t.Fatalf("Add(%.20q) refused a new string", id)
		}
		if s.Add(id, 99) {
			t.Fatalf("Add(%.20q) accepted it twice", id)
		}
	}
	for i, id := range ids {
		if tag, ok := s.Tag(id); !ok || tag != uint8(i) {
			t.Fatalf("Tag(%.20q) = %d, %v; want %d", id, tag, ok, uint8(i))
		}
	}
	if s.Has("c5000") || s.Has("call_1") || s.Len() != len(ids) {
		t.Fatalf("Len %d, want %d, or a string never added is in the set", s.Len(), len(ids))
	}
}

// TestSetKeepsStringsWhoseHashesCollide: two strings with one hash are
// both kept, each with its own tag (the collision is forced by giving the
// second the first's slot).
func TestSetKeepsStringsWhoseHashesCollide(t *testing.T) {
	var s Set
	s.Add("first", 1)
	// Force "second" to collide: index it under "first"'s hash.
	h := maphash.String(s.seed, "second")
	s.index[h] = s.index[maphash.String(s.seed, "first")]
	s.mark(h)
	if s.Has("second") {
		t.Fatal("a string never added is in the set")
	}
	if !s.Add("second", 2) || s.Add("second", 3) {
		t.Fatal("a colliding string was not added exactly once")
	}
	if tag, ok := s.Tag("second"); !ok || tag != 2 {
		t.Fatalf("Tag(second) = %d, %v", tag, ok)
	}
	if tag, ok := s.Tag("first"); !ok || tag != 1 {
		t.Fatalf("Tag(first) = %d, %v", tag, ok)
	}
	if len(s.spill) != 1 {
		t.Fatalf("%d strings spilled, want the colliding one", len(s.spill))
	}
}

// The bloom filter in front of the index never hides a string the set
// holds, as it doubles.
func TestSetBloomNeverHidesAString(t *testing.T) {
	var s Set
	for i := range 20000 {
		s.Add(fmt.Sprint("id-", i), 0)
		if i%997 == 0 {
			for j := 0; j <= i; j += 101 {
				if !s.Has(fmt.Sprint("id-", j)) {
					t.Fatalf("after %d strings, id-%d is hidden", i+1, j)
				}
			}
		}
	}
	if s.Has("id-20000") {
		t.Fatal("a string never added is in the set")
	}
}

// A set checked against a map, strings added in random order with some
// added twice, through many doublings of the bloom filter: every string
// is found with its tag and no other is.
func TestSetMatchesAMap(t *testing.T) {
	var s Set
	want := map[string]uint8{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 30000 {
		id := fmt.Sprint(r.IntN(40000))
		_, had := want[id]
		if added := s.Add(id, uint8(i)); added == had {
			t.Fatalf("Add(%s) = %v with the string already there %v", id, added, had)
		}
		if !had {
			want[id] = uint8(i)
		}
	}
	for i := range 40000 {
		id := fmt.Sprint(i)
		tag, ok := s.Tag(id)
		if w, in := want[id]; ok != in || tag != w {
			t.Fatalf("Tag(%s) = %d, %v; want %d, %v", id, tag, ok, w, in)
		}
	}
	if s.Len() != len(want) {
		t.Fatalf("Len %d, want %d", s.Len(), len(want))
	}
}

// TestLookupsAllocateNothing: comparing a held string's bytes with the
// one looked up copies neither, so a lookup, and an Add of a string the set
// holds, allocate nothing.
func TestLookupsAllocateNothing(t *testing.T) {
	var s Set
	for i := range 1000 {
		s.Add(fmt.Sprintf("call_%d", i), 1)
	}
	id := "call_500"
	if n := testing.AllocsPerRun(100, func() {
		if !s.Has(id) || s.Add(id, 2) {
			t.Fatal("call_500 not held")
		}
	}); n != 0 {
		t.Errorf("a lookup allocated %.0f times", n)
	}
}
