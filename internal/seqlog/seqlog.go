// Package seqlog is an append-only log whose elements never move once
// appended, so readers may hold pointers into it while writers append. Its
// chunks start small and double up to a cap, so a short log costs little and
// a long one never copies what it already holds.
package seqlog

import "math/bits"

// Chunk k holds ChunkLen(k) elements: FirstChunk, doubling up to MaxChunk,
// then MaxChunk each. Locate finds an index's chunk in constant time.
const (
	FirstChunk = 8
	MaxChunk   = 1024
	// doubled is how many elements the doubling chunks hold together:
	// 8 + 16 + ... + 1024.
	doubled   = 2*MaxChunk - FirstChunk
	doublings = 8 // log2(MaxChunk / FirstChunk) + 1 chunks before the cap
)

// ChunkLen is the length of chunk k.
func ChunkLen(k int) int {
	if k < doublings {
		return FirstChunk << k
	}
	return MaxChunk
}

// Locate returns the chunk holding element i and i's offset in it.
func Locate(i int) (chunk, off int) {
	if i >= doubled {
		i -= doubled
		return doublings + i/MaxChunk, i % MaxChunk
	}
	// Chunks 0..k-1 hold FirstChunk·(2^k − 1) elements.
	k := bits.Len(uint(i/FirstChunk+1)) - 1
	return k, i - FirstChunk*(1<<k-1)
}

// Log is an append-only sequence. The zero value is empty and ready to use.
// It does no locking: its owner serializes access.
type Log[T any] struct {
	chunks [][]T
	n      int
}

// Append adds v at the end.
func (l *Log[T]) Append(v T) {
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) == cap(l.chunks[k-1]) {
		l.chunks = append(l.chunks, make([]T, 0, ChunkLen(k)))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, v)
	l.n++
}

// Len returns the number of elements.
func (l *Log[T]) Len() int { return l.n }

// At returns a pointer to element i, which stays valid for the log's life.
func (l *Log[T]) At(i int) *T {
	if i < 0 || i >= l.n {
		panic("seqlog: index out of range")
	}
	k, off := Locate(i)
	return &l.chunks[k][off]
}

// All calls f for each element in order until f returns false.
func (l *Log[T]) All(f func(*T) bool) {
	for _, c := range l.chunks {
		for i := range c {
			if !f(&c[i]) {
				return
			}
		}
	}
}
