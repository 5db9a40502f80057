package schema

import (
	"errors"
	"strconv"
	"sync"
	"testing"
)

// TestCacheEvictsLeastRecentlyUsed defends the 16-entry bound.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	var c Cache
	first, err := c.Compile([]byte(`{"const":0}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < DefaultCacheSize; i++ {
		if _, err := c.Compile([]byte(`{"const":` + strconv.Itoa(i) + `}`)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != DefaultCacheSize {
		t.Fatalf("Len = %d, want %d", c.Len(), DefaultCacheSize)
	}
	// Touch the first entry, then add one more: entry 1 is evicted, not 0.
	if again, _ := c.Compile([]byte(`{"const":0}`)); again != first {
		t.Fatal("hit did not return the cached schema")
	}
	if _, err := c.Compile([]byte(`{"const":"new"}`)); err != nil {
		t.Fatal(err)
	}
	if c.Len() != DefaultCacheSize {
		t.Fatalf("Len = %d after eviction, want %d", c.Len(), DefaultCacheSize)
	}
	if again, _ := c.Compile([]byte(`{"const":0}`)); again != first {
		t.Fatal("recently used entry was evicted")
	}
	evicted := mustCompile(t, `{"const":1}`).Digest()
	if c.get(func(e cacheEntry) bool { return e.schema.digest == evicted }) != nil {
		t.Fatal("least recently used entry was kept")
	}
}

// TestCacheUsesItsLimitsAndSkipsErrors checks that errors are returned and
// not cached, and that the cache's limits apply.
func TestCacheUsesItsLimitsAndSkipsErrors(t *testing.T) {
	t.Parallel()
	c := NewCache(2, Limits{MaxDepth: 1})
	if _, err := c.Compile([]byte(`{"not":{}}`)); !errors.Is(err, ErrBound) {
		t.Fatalf("Compile = %v, want ErrBound from the cache's depth limit", err)
	}
	if _, err := c.Compile([]byte(`{"pattern":"x"}`)); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Compile = %v, want ErrUnsupported", err)
	}
	if c.Len() != 0 {
		t.Fatalf("errors were cached: Len = %d", c.Len())
	}
}

// TestCacheConcurrentCompileSharesOneSchema runs concurrent compiles of the
// same text (run with -race).
func TestCacheConcurrentCompileSharesOneSchema(t *testing.T) {
	t.Parallel()
	c := NewCache(4, Limits{})
	var wg sync.WaitGroup
	got := make([]*Schema, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.Compile([]byte(`{"type":"integer"}`))
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = s
			_ = s.Validate([]byte(`1`))
		}()
	}
	wg.Wait()
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1", c.Len())
	}
	for _, s := range got {
		if s != got[0] && s.Digest() != got[0].Digest() {
			t.Fatal("concurrent compiles disagree")
		}
	}
}
