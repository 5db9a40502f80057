package ledger

import (
	"context"
	"encoding/json"
	"iter"
	"maps"
	"slices"

	"sync"
	"time"

	"github.com/pabloagent/pablo/internal/seqlog"
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
	// pending and sessions are its index (see [IndexedStore]): the tasks
	// not yet terminal, and the tasks of each session by session ID.
	pending  map[string]*memoryTask
	sessions map[string][]string
}

// memoryTask keeps a task's records in a seqlog, so appending never copies
// earlier records and a short task costs little.
type memoryTask struct {
	log    seqlog.Log[memRecord]
	others seqlog.Log[Record] // the records kept whole, by value
	// lastN is the highest N kept; volatileN the highest one kept by
	// AppendVolatile, which a later Append carries again.
	lastN, volatileN uint64
	// att is what the records say needs attention.
	att attention
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
	return &MemoryStore{tasks: map[string]*memoryTask{}, results: map[ResultRef]json.RawMessage{},
		pending: map[string]*memoryTask{}, sessions: map[string][]string{}}
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
			m.pending[r.TaskID] = t
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
		if indexed(r.Kind) {
			sessions := len(t.att.sessions)
			t.att.apply(r)
			if t.att.terminal {
				delete(m.pending, r.TaskID)
			}
			for _, l := range t.att.sessions[sessions:] {
				m.sessions[l.SessionID] = append(m.sessions[l.SessionID], r.TaskID)
			}
		}
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

// Pending implements [IndexedStore].
func (m *MemoryStore) Pending(context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			yield("", ErrClosed)
			return
		}
		ids := slices.Sorted(maps.Keys(m.pending))
		m.mu.Unlock()
		for _, id := range ids {
			if !yield(id, nil) {
				return
			}
		}
	}
}

// ProcessGroups implements [IndexedStore].
func (m *MemoryStore) ProcessGroups(context.Context) iter.Seq2[TaskProcessGroup, error] {
	return func(yield func(TaskProcessGroup, error) bool) {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			yield(TaskProcessGroup{}, ErrClosed)
			return
		}
		var out []TaskProcessGroup
		for _, id := range slices.Sorted(maps.Keys(m.pending)) {
			out = append(out, m.pending[id].att.groups...)
		}
		m.mu.Unlock()
		for _, g := range out {
			if !yield(g, nil) {
				return
			}
		}
	}
}

// ForgetProcessGroups implements [IndexedStore].
func (m *MemoryStore) ForgetProcessGroups(_ context.Context, groups []TaskProcessGroup) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, g := range groups {
		if t := m.pending[g.TaskID]; t != nil {
			t.att.groups = slices.DeleteFunc(t.att.groups, func(x TaskProcessGroup) bool { return x.N == g.N })
		}
	}
	return nil
}

// SessionTasks implements [IndexedStore].
func (m *MemoryStore) SessionTasks(_ context.Context, sessionID string) iter.Seq2[SessionTask, error] {
	return func(yield func(SessionTask, error) bool) {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			yield(SessionTask{}, ErrClosed)
			return
		}
		var out []SessionTask
		add := func(sid string) {
			for i, id := range m.sessions[sid] {
				if slices.Contains(m.sessions[sid][:i], id) {
					continue // linked to the session twice: once is enough
				}
				t := m.tasks[id]
				last := t.record(t.log.At(t.log.Len()-1), id)
				for _, l := range t.att.sessions {
					if l.SessionID == sid {
						out = append(out, SessionTask{TaskID: id, Session: l, Updated: last.Time})
					}
				}
			}
		}
		if sessionID != "" {
			add(sessionID)
		} else {
			for sid := range m.sessions {
				add(sid)
			}
		}
		m.mu.Unlock()
		sortSessionTasks(out)
		for _, st := range out {
			if !yield(st, nil) {
				return
			}
		}
	}
}

// TasksAfter implements [TaskPager].
func (m *MemoryStore) TasksAfter(ctx context.Context, after string, limit int) ([]string, error) {
	ids, err := m.Tasks(ctx)
	if err != nil {
		return nil, err
	}
	i, found := slices.BinarySearch(ids, after)
	if found {
		i++
	}
	ids = ids[i:]
	return slices.Clone(ids[:min(len(ids), max(limit, 0))]), nil
}
