// Package seqlog is an append-only log whose elements never move once
// appended, so readers may hold pointers into it while writers append. Its
// chunks start small and double up to a cap, so a short log costs little and
// a long one never copies what it already holds.
package seqlog

const (
	firstChunk = 8
	maxChunk   = 1024
)

// Log is an append-only sequence. The zero value is empty and ready to use.
// It does no locking: its owner serializes access.
type Log[T any] struct {
	chunks [][]T
	n      int
}

// Append adds v at the end.
func (l *Log[T]) Append(v T) {
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) == cap(l.chunks[k-1]) {
		size := firstChunk
		if k > 0 {
			size = min(2*cap(l.chunks[k-1]), maxChunk)
		}
		l.chunks = append(l.chunks, make([]T, 0, size))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, v)
	l.n++
}

// Len returns the number of elements.
func (l *Log[T]) Len() int { return l.n }

// At returns a pointer to element i, which stays valid for the log's life.
func (l *Log[T]) At(i int) *T {
	for _, c := range l.chunks {
		if i < len(c) {
			return &c[i]
		}
		i -= len(c)
	}
	panic("seqlog: index out of range")
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
