package seqlog

import (
	"fmt"
	"testing"
)

func TestElementsNeverMove(t *testing.T) {
	var l Log[int]
	var ptrs []*int
	for i := 0; i < 5000; i++ {
		l.Append(i)
		ptrs = append(ptrs, l.At(i))
	}
	for i, p := range ptrs {
		if *p != i || l.At(i) != p {
			t.Fatalf("element %d moved or changed", i)
		}
	}
	n := 0
	l.All(func(v *int) bool { n++; return *v < 99 })
	if n != 100 || l.Len() != 5000 {
		t.Fatalf("All visited %d, Len %d", n, l.Len())
	}
}

func ExampleLog() {
	var l Log[string]
	l.Append("run.started")
	l.Append("run.finished")
	fmt.Println(l.Len(), *l.At(1))
	// Output: 2 run.finished
}

// Locate agrees with walking the chunks, at every chunk boundary and past
// the doubling ones.
func TestLocateMatchesTheChunkWalk(t *testing.T) {
	k, off := 0, 0
	for i := 0; i < 20000; i++ {
		if gk, goff := Locate(i); gk != k || goff != off {
			t.Fatalf("Locate(%d) = %d,%d, want %d,%d", i, gk, goff, k, off)
		}
		if off++; off == ChunkLen(k) {
			k, off = k+1, 0
		}
	}
}

func BenchmarkAtLongLog(b *testing.B) {
	var l Log[int]
	for i := range 1 << 20 {
		l.Append(i)
	}
	i := 0
	for b.Loop() {
		i = (i + 7919) & (1<<20 - 1)
		if *l.At(i) != i {
			b.Fatal(i)
		}
	}
}
