// Package ids produces the identifiers Pablo gives to tasks, agents and calls.
//
// Every identifier is a version 4 UUID in its canonical lowercase string form.
// Production code uses [Random]; tests use [Sequential], which yields a
// predictable series so that recorded ledgers and golden files are stable.
//
// [ValidName] is the one check of the names Pablo puts inside its
// identifiers and file names (MCP servers and tools, Skill roots, rule and
// authority IDs, trace session IDs): one character set, each caller its
// own bound.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
)

// Source produces identifiers. Implementations must be safe for concurrent use
// and must never return the same identifier twice.
type Source interface {
	// NewID returns a fresh UUIDv4 string such as
	// "0b2e2c9e-6a3f-4c61-9d55-3c2f1e0a7b44".
	NewID() string
}

// Random is a [Source] of random UUIDv4 strings drawn from crypto/rand. Its
// zero value is ready to use.
type Random struct{}

// NewID returns a random UUIDv4 string. It allocates only the string: a
// task draws one for every model call.
func (Random) NewID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])  // never fails: crypto/rand crashes the program instead
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // the RFC 9562 variant
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	hex.Encode(b[9:13], u[4:6])
	hex.Encode(b[14:18], u[6:8])
	hex.Encode(b[19:23], u[8:10])
	hex.Encode(b[24:36], u[10:16])
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b[:])
}

// Sequential is a deterministic [Source] for tests: the n-th call returns a
// valid UUIDv4 whose last twelve hex digits hold n, for example
// "00000000-0000-4000-8000-000000000001". Its zero value starts at 1.
type Sequential struct {
	n atomic.Uint64
}

// NewSequential returns a Sequential whose first identifier holds start+1, so
// two sources in one test can be kept apart by giving them distinct starts.
func NewSequential(start uint64) *Sequential {
	s := &Sequential{}
	s.n.Store(start)
	return s
}

// NewID returns the next identifier in the series.
func (s *Sequential) NewID() string {
	return Format(s.n.Add(1))
}

// Format returns the UUIDv4-shaped string that holds n: the version nibble is
// 4, the variant bits are 10, the high 32 bits of n land in the first group and
// the low 48 bits in the last group.
func Format(n uint64) string {
	const hexdigits = "0123456789abcdef"
	b := []byte("00000000-0000-4000-8000-000000000000")
	hi := uint32(n >> 48)
	for i := 7; i >= 0; i-- {
		b[i] = hexdigits[hi&0xf]
		hi >>= 4
	}
	lo := n & (1<<48 - 1)
	for i := 35; i >= 24; i-- {
		b[i] = hexdigits[lo&0xf]
		lo >>= 4
	}
	return string(b)
}
