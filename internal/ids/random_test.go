package ids

import (
	"testing"

	"github.com/google/uuid"
)

// Random's IDs are version 4 UUIDs in canonical form, each fresh, and one
// costs one allocation, the string.
func TestRandomIsAFreshUUIDv4(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := Random{}.NewID()
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id || seen[id] {
			t.Fatalf("%q: %v, version %d, variant %v, seen %v", id, err, u.Version(), u.Variant(), seen[id])
		}
		seen[id] = true
	}
	if raceEnabled {
		return // the race detector's instrumentation moves the array to the heap
	}
	if n := testing.AllocsPerRun(100, func() { _ = Random{}.NewID() }); n != 1 {
		t.Errorf("NewID allocates %v times, want 1", n)
	}
}
