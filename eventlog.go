package pablo

import (
	"unsafe"

	"github.com/pabloagent/pablo/internal/seqlog"
)

// eventLog is the events a task retains for its readers, laid out for the
// garbage collector: a task may hold millions of text deltas, so entries
// and delta text live in pointer-free chunks the collector never scans and
// appends never meet a write barrier. Only the rare event that is not a
// text delta keeps an EventData. Elements never move once appended; the
// task's mutex guards the log.
type eventLog struct {
	entries seqlog.Log[logEntry]
	text    [][]byte // chunks of delta text, appended to and never rewritten
	data    seqlog.Log[*EventData]
	hdrs    []*eventHeader
}

// logEntry is one retained event. A text delta's text is n bytes at off in
// text[chunk]; any other event is data[data-1].
type logEntry struct {
	rootSeq, seq uint64
	micros       int64
	chunk, off   uint32
	n            uint32
	data         uint32
	hdr          uint32
}

// Text chunks grow from minTextChunk to maxTextChunk bytes; a longer delta
// gets a chunk of its own.
const (
	minTextChunk = 1 << 10
	maxTextChunk = 64 << 10
)

func (l *eventLog) Len() int { return l.entries.Len() }

func (l *eventLog) append(en *eventEntry) {
	e := logEntry{rootSeq: en.rootSeq, seq: en.seq, micros: en.micros, hdr: l.header(en.hdr)}
	if en.data != nil {
		l.data.Append(en.data)
		e.data = uint32(l.data.Len())
	} else if n := len(en.text); n > 0 {
		k := len(l.text) - 1
		if k < 0 || cap(l.text[k])-len(l.text[k]) < n {
			size := minTextChunk
			if k >= 0 {
				size = min(2*cap(l.text[k]), maxTextChunk)
			}
			l.text = append(l.text, make([]byte, 0, max(size, n)))
			k++
		}
		e.chunk, e.off, e.n = uint32(k), uint32(len(l.text[k])), uint32(n)
		l.text[k] = append(l.text[k], en.text...)
	}
	l.entries.Append(e)
}

// header returns the index of h, adding it on first use.
func (l *eventLog) header(h *eventHeader) uint32 {
	for i := len(l.hdrs) - 1; i >= 0; i-- {
		if l.hdrs[i] == h {
			return uint32(i)
		}
	}
	l.hdrs = append(l.hdrs, h)
	return uint32(len(l.hdrs) - 1)
}

// at expands event i.
func (l *eventLog) at(i int) Event {
	e := l.entries.At(i)
	en := eventEntry{rootSeq: e.rootSeq, seq: e.seq, micros: e.micros, hdr: l.hdrs[e.hdr]}
	switch {
	case e.data > 0:
		en.data = *l.data.At(int(e.data) - 1)
	case e.n > 0:
		// The bytes were written once and are never written again, so a
		// string over them is immutable.
		en.text = unsafe.String(&l.text[e.chunk][e.off], int(e.n))
	}
	return en.event()
}
