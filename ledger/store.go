package ledger

import (
	"context"
	"encoding/json"
	"github.com/pabloagent/pablo/internal/seqlog"
	"slices"
	"sync"
	"time"
)

// Store persists records. Implementations must be safe for concurrent use.
//
// Each Append is a barrier: one committed store transaction. When Append
// returns nil, every record of recs is durable, atomically (a crash leaves
// all of them or none visible), and so is every record of every Append that
// returned before it was called. A [Root] hands a task's records to the store
// in N order and only at its barriers (see the package doc), so a crash
// loses at most the records a task accepted after its last barrier: what
// survives of a task is always a prefix of its records. A store may commit
// several concurrent Appends in one transaction (the bolt store does); each
// still counts as a barrier for its caller. Append must not retain recs
// itself (it may retain the values the records point to, which are
// immutable).
// Records returns a task's records in N order; Tasks lists task IDs in
// ascending order; Result returns a result's canonical JSON, indexed from
// RecordResult records.
type Store interface {
	Append(ctx context.Context, recs []Record) error
	Records(ctx context.Context, taskID string) ([]Record, error)
	Tasks(ctx context.Context) ([]string, error)
	Result(ctx context.Context, ref ResultRef) (json.RawMessage, error)
	Close() error
}

// MemoryStore is a [Store] that keeps records in memory, for tests and for
// hosts that want no persistence. "Durable" means "appended to a slice".
type MemoryStore struct {
	mu      sync.Mutex
	closed  bool
	tasks   map[string]*memoryTask
	results map[ResultRef]json.RawMessage
}

// memoryTask keeps a task's records in a seqlog, so appending never copies
// earlier records and a short task costs little.
type memoryTask struct {
	log    seqlog.Log[memRecord]
	others seqlog.Log[Record] // the records kept whole, by value
	// lastN is the highest N kept; volatileN the highest one kept by
	// AppendVolatile, which a later Append carries again.
	lastN, volatileN uint64
}

// memRecord is a record as the memory store keeps it. Events, the bulk of
// every task, are held in half the space of a Record and with fewer
// pointers for the collector to trace; any other record, or an event that
// would not round-trip exactly, is kept whole in others, at other-1.
type memRecord struct {
	n                      uint64
	micros                 int64
	rootSeq, seq           uint64
	agentID, parentID, typ string
	payload                json.RawMessage
	other                  int
}

func (t *memoryTask) add(r *Record) {
	t.lastN = max(t.lastN, r.N)
	if r.Kind == RecordEvent && r.Event.Time == r.Time && r.Event.RootID == r.TaskID &&
		r.Time == time.UnixMicro(r.Time.UnixMicro()).UTC() {
		e := &r.Event
		t.log.Append(memRecord{n: r.N, micros: r.Time.UnixMicro(), rootSeq: e.RootSeq, seq: e.Seq,
			agentID: e.AgentID, parentID: e.ParentID, typ: e.Type, payload: e.Payload})
		return
	}
	t.others.Append(*r)
	t.log.Append(memRecord{other: t.others.Len()})
}

// record rebuilds the Record m was made from.
func (t *memoryTask) record(m *memRecord, taskID string) Record {
	if m.other > 0 {
		return *t.others.At(m.other - 1)
	}
	at := time.UnixMicro(m.micros).UTC()
	return Record{TaskID: taskID, N: m.n, Kind: RecordEvent, Time: at, Event: Event{
		RootSeq: m.rootSeq, Seq: m.seq, RootID: taskID, ParentID: m.parentID, AgentID: m.agentID,
		Type: m.typ, Time: at, Payload: m.payload,
	}}
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{tasks: map[string]*memoryTask{}, results: map[ResultRef]json.RawMessage{}}
}

// Append implements [Store].
func (m *MemoryStore) Append(_ context.Context, recs []Record) error {
	return m.append(recs, false)
}

// AppendVolatile implements [VolatileStore]: a memory store keeps volatile
// records like any other (it does not outlive its process either), and
// keeps once those a later Append carries again.
func (m *MemoryStore) AppendVolatile(_ context.Context, recs []Record) error {
	return m.append(recs, true)
}

func (m *MemoryStore) append(recs []Record, volatile bool) error {
	for i := range recs {
		if recs[i].TaskID == "" || recs[i].N == 0 {
			return &InvalidError{Field: "record", Reason: "needs a TaskID and an N of at least 1"}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	var t *memoryTask
	var last string
	for i := range recs {
		r := &recs[i]
		if r.Kind == RecordResult && r.Result != nil {
			if _, ok := m.results[r.Result.ID]; !ok {
				m.results[r.Result.ID] = r.Result.Data
			}
		}
		if t == nil || r.TaskID != last {
			t, last = m.tasks[r.TaskID], r.TaskID
		}
		if t == nil {
			t = &memoryTask{}
			m.tasks[r.TaskID] = t
		}
		switch {
		case volatile && r.N <= t.lastN:
			continue // kept already
		case volatile:
			t.volatileN = r.N
		case r.N != 0 && r.N <= t.volatileN:
			continue // kept already, by AppendVolatile
		}
		t.add(r)
	}
	return nil
}

// Records implements [Store]. The returned slice is a copy.
func (m *MemoryStore) Records(_ context.Context, taskID string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	t, ok := m.tasks[taskID]
	if !ok {
		return nil, &StateError{What: "task", ID: taskID, Op: "read", Reason: reasonUnknown}
	}
	recs := make([]Record, 0, t.log.Len())
	t.log.All(func(r *memRecord) bool { recs = append(recs, t.record(r, taskID)); return true })
	return recs, nil
}

// Tasks implements [Store].
func (m *MemoryStore) Tasks(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	ids := make([]string, 0, len(m.tasks))
	for id := range m.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// Result implements [Store].
func (m *MemoryStore) Result(_ context.Context, ref ResultRef) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	data, ok := m.results[ref]
	if !ok {
		return nil, &StateError{What: "result", ID: string(ref), Op: "read", Reason: reasonUnknown}
	}
	return data, nil
}

// Close implements [Store]; later calls fail with [ErrClosed].
func (m *MemoryStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
