package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// DefaultCacheSize is the reference's compiled-schema cache size.
const DefaultCacheSize = 16

// Cache holds recently compiled schemas keyed by Digest, so a schema seen
// again (an MCP tool schema on every call, a child's output schema) is not
// recompiled. The zero value holds DefaultCacheSize schemas compiled with
// DefaultLimits. A Cache is safe for concurrent use; its owner decides its
// lifetime (there is no process-wide cache).
//
// On a hit, Compile returns the schema compiled first, whose Raw text may
// differ from the new text in whitespace and key order (never in meaning:
// the canonical forms are equal).
type Cache struct {
	mu      sync.Mutex
	size    int
	lim     Limits
	entries []cacheEntry // most recently used last
}

// cacheEntry remembers the raw text's hash too, so a byte-identical schema
// (the common case: the same tool schema on every call) hits without parsing.
type cacheEntry struct {
	rawSum [sha256.Size]byte
	schema *Schema
}

// NewCache returns a cache of size schemas (non-positive means
// DefaultCacheSize) compiled with lim.
func NewCache(size int, lim Limits) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{size: size, lim: lim.withDefaults()}
}

// Compile returns the cached schema with raw's digest, or compiles raw with
// the cache's limits and caches it. Errors are not cached.
func (c *Cache) Compile(raw []byte) (*Schema, error) {
	c.mu.Lock()
	if c.size == 0 {
		c.size, c.lim = DefaultCacheSize, DefaultLimits()
	}
	lim := c.lim
	c.mu.Unlock()

	rawSum := sha256.Sum256(raw)
	if s := c.get(func(e cacheEntry) bool { return e.rawSum == rawSum }); s != nil {
		return s, nil
	}
	doc, canonical, err := parseSchemaDoc(raw, lim)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canonical)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if s := c.get(func(e cacheEntry) bool { return e.schema.digest == digest }); s != nil {
		return s, nil
	}
	s, err := compileDoc(raw, &doc, canonical, lim)
	if err != nil {
		return nil, err
	}
	return c.put(cacheEntry{rawSum: rawSum, schema: s}), nil
}

// Len returns the number of cached schemas.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// get returns the schema of the first entry matching, moving it to the
// most recently used end.
func (c *Cache) get(match func(cacheEntry) bool) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if match(e) {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			return e.schema
		}
	}
	return nil
}

// put adds s unless a concurrent Compile already cached the same digest, in
// which case the cached schema wins so every caller shares one instance.
func (c *Cache) put(n cacheEntry) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.schema.digest == n.schema.digest {
			return e.schema
		}
	}
	if len(c.entries) >= c.size {
		c.entries = append(c.entries[:0], c.entries[len(c.entries)-c.size+1:]...)
	}
	c.entries = append(c.entries, n)
	return n.schema
}
