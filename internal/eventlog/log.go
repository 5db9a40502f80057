// Package eventlog holds the events a task retains for its readers: every
// event the run loop publishes, in root_seq order, for any number of
// readers (pablo.Task.Events) that each see every event from the first.
//
// An append takes the event's ledger stamp and its slot together under
// the log's own lock ([Log.Add]), so the log's order is the ledger's
// whatever the number of agents appending. Readers hold the lock New was
// given (the task's, which its wake-ups use too) and read only what was
// published to them. The log is laid out for the garbage collector: entries
// and text delta bytes live in pointer-free chunks, and [Log.Grow] allocates
// the next chunks between events rather than inside one's delivery.
package eventlog

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/seqlog"
	"github.com/pabloagent/pablo/model"
)

// New returns an empty log whose readers hold readers while they read.
func New(readers *sync.Mutex) *Log { return &Log{mu: readers} }

// Log is the events a task retains for its readers.
//
// It is laid out for the garbage collector: a task may hold millions of text
// deltas, so entries and delta text live in pointer-free chunks the
// collector never scans and appends never meet a write barrier; only the
// rare event that is not a text delta keeps an event.EventData.
//
// The four events every turn of a task publishes are kept at a fraction of
// an event.EventData's size and without a pointer: a tool call's
// tool.started and tool.finished as a [Tool], a model call's model.started
// and model.finished as a [Model], each recorded in pointer-free chunks
// with its call ID and payload in the text chunks (records.go).
//
// And it is appended to without the readers' lock: one appender at a time,
// under the log's own lock (appendMu, see Add), takes the event's ledger
// stamp, writes a slot and its text and counts it, so the slots are in
// root_seq order. Readers hold mu and read only what was published to
// them: a reader registers, reads the count under the log's lock, and from
// then on every append also publishes the count in n. So an append pays
// for an atomic store only while somebody reads. The chunk lists change
// only under mu, and a slot or a text byte is never written again once
// counted, so a reader never sees a write in progress.
type Log struct {
	// appendMu is the log's lock: it serializes appends and guards the
	// appender's state below.
	appendMu sync.Mutex
	mu       *sync.Mutex // the task's; guards the lists below
	n        atomic.Int64
	readers  atomic.Int32
	entries  [][]logEntry // chunks of fixed length
	text     [][]byte     // chunks of fixed length
	data     []*event.EventData
	tools    seqlog.Log[toolRec]
	models   seqlog.Log[modelRec]
	hdrs     []*Header
	// What a tool or a model record names instead of holding a pointer:
	// the distinct short strings (tool names, providers, statuses...),
	// the routes, and the payloads too long to copy.
	strs   []string
	routes []*event.RouteAttempt
	bigs   [][]byte

	// The appender's own; guarded by appendMu.
	count   int
	k, used int // the entry chunk being filled, and its slots in use
	t, fill int // the text chunk being filled, and its bytes in use

	// When a chunk being filled is the last of its list and reaches its
	// mark, a few events short of full, the log is low on room: the task
	// then grows it after delivering the event (see Grow), so the
	// allocation lands between events rather than inside one's delivery.
	// The marks are that close to full so that a task ending soon after
	// seldom leaves a chunk unused. A mark of 0 is never reached.
	entryMark, textMark int
	low                 atomic.Bool
	strIdx              map[string]uint32 // strs by value
}

// Marks: a chunk of n entries is low with min(n/8, entriesLeft) slots
// left, a text chunk of n bytes with min(n/8, textLeft) bytes left.
const (
	entriesLeft = 4
	textLeft    = 512
)

func markOf(n, left int) int { return n - min(n/8, left) }

// logEntry is one retained event. A text delta's text is n bytes at off in
// text[chunk]; a tool event is tools.At(data-1), a model event
// models.At(data-1); any other event is data[data-1].
type logEntry struct {
	rootSeq, seq uint64
	micros       int64
	chunk, off   uint32
	n            uint32
	data         uint32
	hdr          uint32
	kind         entryKind
}

// entryKind is the list a logEntry's data indexes.
type entryKind uint8

const (
	kindData entryKind = iota
	kindTool
	kindModel
)

// Tool is a tool.started event (Call set) or a tool.finished one (CallID,
// Name and Result set) as the log keeps it.
type Tool struct {
	Call         *event.Call
	CallID, Name string
	Result       json.RawMessage
	Masked       int
}

// Data is the event t is.
func (t *Tool) Data() event.EventData {
	if t.Call != nil {
		return event.EventData{Type: event.ToolStarted, Call: t.Call, Masked: t.Masked}
	}
	return event.EventData{Type: event.ToolFinished, CallID: t.CallID, Name: t.Name, Result: t.Result, Masked: t.Masked}
}

// Model is a model.started event (Provider, Model and Route set) or a
// model.finished one (Finished, and Route and the rest) as the log keeps
// it.
type Model struct {
	Finished        bool
	Provider, Model string
	Route           *event.RouteAttempt
	Status          string
	FinishReason    model.FinishReason
	Usage           *event.OutcomeUsage
	OutputBytes     *uint64
	RetryInMS       *int64
}

// Data is the event m is.
func (m *Model) Data() event.EventData {
	if !m.Finished {
		return event.EventData{Type: event.ModelStarted, Provider: m.Provider, Model: m.Model, ModelRoute: m.Route}
	}
	return event.EventData{Type: event.ModelFinished, ModelRoute: m.Route, Status: m.Status, FinishReason: m.FinishReason,
		Usage: m.Usage, OutputBytes: m.OutputBytes, RetryInMS: m.RetryInMS}
}

// Entry chunks have seqlog's lengths, so seqlog.Locate finds an entry in
// constant time. Text chunks grow from minTextChunk to maxTextChunk bytes; a
// longer delta gets a text chunk of its own.
const (
	minTextChunk = 1 << 10
	maxTextChunk = 64 << 10
)

// Reader is one registered reader's view of the log's length.
type Reader struct {
	l    *Log
	base int // the count when the reader registered
}

// Reader registers a reader of the log. The reader must Close.
func (l *Log) Reader() *Reader {
	l.readers.Add(1)
	r := &Reader{l: l}
	l.appendMu.Lock()
	r.base = l.count
	l.appendMu.Unlock()
	return r
}

// Len is how many events the reader may read.
func (r *Reader) Len() int { return max(r.base, int(r.l.n.Load())) }

// Close ends the reader's registration.
func (r *Reader) Close() { r.l.readers.Add(-1) }

// Add appends one event under the log's lock: stamp records it in the
// ledger and returns its stamp, and an event the ledger stamped (a zero
// RootSeq means it did not) is retained, so the log holds its events in
// root_seq order whatever the number of appenders. stamp's error is
// returned with the stamp: a ledger may stamp an event and still fail.
func (l *Log) Add(stamp func() (Stamp, error), hdr *Header, text string, data *event.EventData) (Stamp, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	st, err := stamp()
	if st.RootSeq != 0 {
		l.append(st, hdr, text, data, nil, nil)
	}
	return st, err
}

// AddTool is [Log.Add] for a tool event: the log keeps t, not an
// event.EventData.
func (l *Log) AddTool(stamp func() (Stamp, error), hdr *Header, t *Tool) (Stamp, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	st, err := stamp()
	if st.RootSeq != 0 {
		l.append(st, hdr, "", nil, t, nil)
	}
	return st, err
}

// AddModel is [Log.Add] for a model event: the log keeps m, not an
// event.EventData.
func (l *Log) AddModel(stamp func() (Stamp, error), hdr *Header, m *Model) (Stamp, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	st, err := stamp()
	if st.RootSeq != 0 {
		l.append(st, hdr, "", nil, nil, m)
	}
	return st, err
}

// append adds one event and publishes it: a text delta's text, or any
// other event's data. l.appendMu must be held. (The fields come one by one
// rather than as an Entry: a struct built for the call and read back
// whole costs a store-forwarding stall on the hot path.)
func (l *Log) append(st Stamp, hdr *Header, text string, data *event.EventData, tool *Tool, mdl *Model) {
	if len(l.entries) == 0 || l.used == len(l.entries[l.k]) {
		l.nextEntries()
	}
	n := len(text)
	if n > 0 && (len(l.text) == 0 || len(l.text[l.t])-l.fill < n) {
		l.nextText(n)
	}
	var tr toolRec
	if tool != nil {
		tr = l.toolBytes(tool)
	}
	h, knownHdr := l.header(hdr)
	if data != nil || tool != nil || mdl != nil || !knownHdr {
		l.mu.Lock()
		if data != nil {
			l.data = append(l.data, data)
		}
		if tool != nil {
			l.tools.Append(l.toolRec(tr, tool))
		}
		if mdl != nil {
			l.models.Append(l.modelRec(mdl))
		}
		if !knownHdr {
			l.hdrs = append(l.hdrs, hdr)
		}
		l.mu.Unlock()
	}
	e := logEntry{rootSeq: st.RootSeq, seq: st.Seq, micros: st.UnixMicros, hdr: h}
	switch {
	case data != nil:
		e.data = uint32(len(l.data))
	case tool != nil:
		e.data, e.kind = uint32(l.tools.Len()), kindTool
	case mdl != nil:
		e.data, e.kind = uint32(l.models.Len()), kindModel
	case n > 0:
		e.chunk, e.off, e.n = uint32(l.t), uint32(l.fill), uint32(n)
		l.fill += copy(l.text[l.t][l.fill:], text)
	}
	l.entries[l.k][l.used] = e
	l.used++
	l.count++
	if l.readers.Load() > 0 {
		l.n.Store(int64(l.count))
	}
	if (l.used == l.entryMark || l.fill >= l.textMark && l.textMark > 0) && !l.low.Load() {
		l.low.Store(true)
	}
}

// nextEntries moves to the next entry chunk, allocating it unless grow
// already did.
func (l *Log) nextEntries() {
	next := l.k + 1
	if len(l.entries) == 0 {
		next = 0
	}
	if next == len(l.entries) {
		chunk := make([]logEntry, seqlog.ChunkLen(next))
		l.mu.Lock()
		l.entries = append(l.entries, chunk)
		l.mu.Unlock()
	}
	l.k, l.used = next, 0
	l.entryMark = 0
	if next+1 == len(l.entries) {
		l.entryMark = markOf(len(l.entries[next]), entriesLeft)
	}
}

// nextText moves to a text chunk with room for n bytes: the one grow
// allocated when it is large enough, else a new one. A delta longer than a
// chunk of the usual size, or than the grown one, gets a chunk of its own,
// placed before the grown one so that the grown one still comes next. Only
// chunks of the usual size have a mark: one of a delta's own is full from
// its first write and asks for no growth.
func (l *Log) nextText(n int) {
	grown := len(l.text) > 0 && l.t+1 < len(l.text)
	usual := true
	switch size := l.textSize(); {
	case grown && len(l.text[l.t+1]) >= n:
		l.t++
	case grown || n > size:
		usual = false
		chunk := make([]byte, n)
		l.mu.Lock()
		if grown {
			// No entry refers to the grown chunk yet: it moves to the end.
			l.text = append(l.text, l.text[l.t+1])
			l.text[l.t+1] = chunk
			l.t++
		} else {
			l.text = append(l.text, chunk)
			l.t = len(l.text) - 1
		}
		l.mu.Unlock()
	default:
		chunk := make([]byte, size)
		l.mu.Lock()
		l.text = append(l.text, chunk)
		l.mu.Unlock()
		l.t = len(l.text) - 1
	}
	l.fill = 0
	l.textMark = 0
	if usual && l.t+1 == len(l.text) {
		l.textMark = markOf(len(l.text[l.t]), textLeft)
	}
}

// textSize is the size of the next text chunk.
func (l *Log) textSize() int {
	if len(l.text) == 0 {
		return minTextChunk
	}
	return min(2*len(l.text[len(l.text)-1]), maxTextChunk)
}

// entriesLow and textLow report whether the entry or text chunk being
// filled is the last of its list and has reached its mark.
func (l *Log) entriesLow() bool { return l.entryMark > 0 && l.used >= l.entryMark }
func (l *Log) textLow() bool    { return l.textMark > 0 && l.fill >= l.textMark }

// Low reports whether the log is low on room: the appender then calls
// Grow after delivering its event.
func (l *Log) Low() bool { return l.low.Load() }

// Grow allocates the chunks that come next when the log is low on room.
// The task calls it after delivering an event. The chunks are allocated
// outside any lock.
func (l *Log) Grow() {
	entries, text := -1, 0
	l.appendMu.Lock()
	l.low.Store(false)
	if l.entriesLow() {
		entries = len(l.entries)
	}
	if l.textLow() {
		text = l.textSize()
	}
	l.appendMu.Unlock()
	var ec []logEntry
	var tc []byte
	if entries >= 0 {
		ec = make([]logEntry, seqlog.ChunkLen(entries))
	}
	if text > 0 {
		tc = make([]byte, text)
	}
	if ec == nil && tc == nil {
		return
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Appends may have moved on meanwhile: install only what is still
	// missing.
	if ec != nil && len(l.entries) == entries {
		l.entries = append(l.entries, ec)
		l.entryMark = 0
	}
	if tc != nil && l.t+1 == len(l.text) {
		l.text = append(l.text, tc)
		l.textMark = 0
	}
}

// header returns the index h has, or will have when it is added.
func (l *Log) header(h *Header) (uint32, bool) {
	for i := len(l.hdrs) - 1; i >= 0; i-- {
		if l.hdrs[i] == h {
			return uint32(i), true
		}
	}
	return uint32(len(l.hdrs)), false
}

// At expands published event i, i < a reader's Len; the readers' lock
// (the one New was given) must be held.
func (l *Log) At(i int) event.Event {
	k, off := seqlog.Locate(i)
	e := &l.entries[k][off]
	en := Entry{Stamp: Stamp{RootSeq: e.rootSeq, Seq: e.seq, UnixMicros: e.micros}, Header: l.hdrs[e.hdr]}
	switch {
	case e.data > 0 && e.kind == kindTool:
		t := l.tool(l.tools.At(int(e.data - 1)))
		data := t.Data()
		en.Data = &data
	case e.data > 0 && e.kind == kindModel:
		m := l.model(l.models.At(int(e.data - 1)))
		data := m.Data()
		en.Data = &data
	case e.data > 0:
		en.Data = l.data[e.data-1]
	case e.n > 0:
		en.Text = string(l.text[e.chunk][e.off : e.off+e.n])
	}
	return en.Event()
}
