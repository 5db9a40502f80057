package ids

import (
	"sync"
	"testing"

	"github.com/google/uuid"
)

func TestSequentialYieldsValidVersion4UUIDs(t *testing.T) {
	t.Parallel()
	s := NewSequential(0)
	for i, want := range []string{
		"00000000-0000-4000-8000-000000000001",
		"00000000-0000-4000-8000-000000000002",
	} {
		got := s.NewID()
		if got != want {
			t.Fatalf("id %d = %q, want %q", i, got, want)
		}
		u, err := uuid.Parse(got)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%q is not a UUIDv4: %v", got, err)
		}
	}
}

func TestFormatKeepsEveryBitOfN(t *testing.T) {
	t.Parallel()
	cases := map[uint64]string{
		0:                   "00000000-0000-4000-8000-000000000000",
		1<<48 - 1:           "00000000-0000-4000-8000-ffffffffffff",
		1 << 48:             "00000001-0000-4000-8000-000000000000",
		^uint64(0):          "0000ffff-0000-4000-8000-ffffffffffff",
		0x1234_5678_9abc_de: "00000012-0000-4000-8000-3456789abcde",
	}
	for n, want := range cases {
		if got := Format(n); got != want {
			t.Errorf("Format(%#x) = %q, want %q", n, got, want)
		}
	}
}

func TestSourcesNeverRepeatUnderConcurrency(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]Source{"random": Random{}, "sequential": &Sequential{}} {
		var mu sync.Mutex
		seen := map[string]bool{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 200 {
					id := src.NewID()
					mu.Lock()
					if seen[id] {
						t.Errorf("%s: duplicate %q", name, id)
					}
					seen[id] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
}

func TestValidNameIsTheSharedNameCharacterSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s   string
		max int
		ok  bool
	}{
		{"records", 32, true},
		{"A-Z_a.z-09", 32, true},
		{"", 32, false},
		{"x", 0, false},
		{"abcd", 4, true},
		{"abcde", 4, false},
		{"a/b", 32, false},
		{"a b", 32, false},
		{"é", 32, false},
		{"a\x00", 32, false},
		{".", 32, true},
		{"..", 32, true},
	} {
		if got := ValidName(tc.s, tc.max); got != tc.ok {
			t.Errorf("ValidName(%q, %d) = %v, want %v", tc.s, tc.max, got, tc.ok)
		}
	}
}
