package pablo

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/pabloagent/pablo/internal/seqlog"
)

// eventLog is the events a task retains for its readers.
//
// It is laid out for the garbage collector: a task may hold millions of text
// deltas, so entries and delta text live in pointer-free chunks the
// collector never scans and appends never meet a write barrier; only the
// rare event that is not a text delta keeps an EventData.
//
// And it is appended to without the readers' lock: one appender at a time,
// under the ledger's lock (see ledger.Root.AppendThen), writes a slot and
// its text and counts it. Readers hold mu and read only what was published
// to them: a reader registers, reads the count under the ledger's lock
// (ledger.Root.Locked), and from then on every append also publishes the
// count in n. So an append pays for an atomic store only while somebody
// reads. The chunk lists change only under mu, and a slot or a text byte is
// never written again once counted, so a reader never sees a write in
// progress.
type eventLog struct {
	mu      *sync.Mutex // the task's; guards the lists below
	n       atomic.Int64
	readers atomic.Int32
	entries [][]logEntry // chunks of fixed length
	text    [][]byte     // chunks of fixed length
	data    []*EventData
	hdrs    []*eventHeader

	// The appender's own; guarded by the ledger's lock.
	count      int
	used, fill int
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

// Entry chunks have seqlog's lengths, so seqlog.Locate finds an entry in
// constant time. Text chunks grow from minTextChunk to maxTextChunk bytes; a
// longer delta gets a text chunk of its own.
const (
	minTextChunk = 1 << 10
	maxTextChunk = 64 << 10
)

// logReader is one registered reader's view of the log's length.
type logReader struct {
	l    *eventLog
	base int // the count when the reader registered
}

// reader registers a reader; locked runs its argument under the ledger's
// lock. The reader must close.
func (l *eventLog) reader(locked func(func())) *logReader {
	l.readers.Add(1)
	r := &logReader{l: l}
	locked(func() { r.base = l.count })
	return r
}

// Len is how many events the reader may read.
func (r *logReader) Len() int { return max(r.base, int(r.l.n.Load())) }

func (r *logReader) close() { r.l.readers.Add(-1) }

// append adds one event and publishes it. Callers are serialized.
func (l *eventLog) append(en *eventEntry) {
	k := len(l.entries) - 1
	needSlot := k < 0 || l.used == len(l.entries[k])
	t := len(l.text) - 1
	needText := len(en.text) > 0 && (t < 0 || len(l.text[t])-l.fill < len(en.text))
	hdr, knownHdr := l.header(en.hdr)
	if needSlot || needText || en.data != nil || !knownHdr {
		l.mu.Lock()
		if needSlot {
			l.entries = append(l.entries, make([]logEntry, seqlog.ChunkLen(len(l.entries))))
			k, l.used = k+1, 0
		}
		if needText {
			size := minTextChunk
			if t >= 0 {
				size = min(2*len(l.text[t]), maxTextChunk)
			}
			l.text = append(l.text, make([]byte, max(size, len(en.text))))
			t, l.fill = t+1, 0
		}
		if en.data != nil {
			l.data = append(l.data, en.data)
		}
		if !knownHdr {
			l.hdrs = append(l.hdrs, en.hdr)
		}
		l.mu.Unlock()
	}
	e := logEntry{rootSeq: en.rootSeq, seq: en.seq, micros: en.micros, hdr: hdr}
	if en.data != nil {
		e.data = uint32(len(l.data))
	} else if n := len(en.text); n > 0 {
		e.chunk, e.off, e.n = uint32(t), uint32(l.fill), uint32(n)
		l.fill += copy(l.text[t][l.fill:], en.text)
	}
	l.entries[k][l.used] = e
	l.used++
	l.count++
	if l.readers.Load() > 0 {
		l.n.Store(int64(l.count))
	}
}

// header returns the index h has, or will have when it is added.
func (l *eventLog) header(h *eventHeader) (uint32, bool) {
	for i := len(l.hdrs) - 1; i >= 0; i-- {
		if l.hdrs[i] == h {
			return uint32(i), true
		}
	}
	return uint32(len(l.hdrs)), false
}

// at expands published event i; l.mu must be held.
func (l *eventLog) at(i int) Event {
	k, off := seqlog.Locate(i)
	e := &l.entries[k][off]
	en := eventEntry{rootSeq: e.rootSeq, seq: e.seq, micros: e.micros, hdr: l.hdrs[e.hdr]}
	switch {
	case e.data > 0:
		en.data = l.data[e.data-1]
	case e.n > 0:
		// The bytes were written once, before n published them, and are
		// never written again: a string over them is immutable.
		en.text = unsafe.String(&l.text[e.chunk][e.off], int(e.n))
	}
	return en.event()
}
