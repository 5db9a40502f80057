package eventlog

import (
	"encoding/json"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
)

// The log keeps a Tool or a Model without a pointer, so that the records a
// long task adds (four a turn) cost the collector nothing to mark: a
// record's strings are indexes into the log's list of distinct strings,
// its call ID and payload are bytes in the text chunks, and what a pointer
// pointed at is a value with a flag saying it was there. Reading a record
// back builds the Tool or Model it was.

// toolRec is a Tool as the log keeps it.
type toolRec struct {
	masked        int
	id, body      span   // the call's ID and arguments, or CallID and Result
	big           uint32 // when set, the body is bigs[big-1] instead
	name, sandbox uint32 // strs indexes
	started       bool   // a tool.started (Call set)
	bodyNil       bool
}

// span is n bytes at off in text[chunk].
type span struct{ chunk, off, n uint32 }

// maxCopied is the longest payload (arguments, result) a record copies
// into the text chunks; a longer one is kept where it is, a pointer the
// collector marks beside bytes it would not otherwise scan.
const maxCopied = 4 << 10

// modelRec is a Model as the log keeps it.
type modelRec struct {
	outputBytes                     uint64
	retryInMS                       int64
	usage                           [4]uint64 // input, output, cache read, cache write
	provider, model, status, reason uint32    // strs indexes
	route                           uint32    // routes[route-1]; 0: none
	flags                           modelFlags
}

type modelFlags uint16

const (
	modelFinished modelFlags = 1 << iota
	modelOutputBytes
	modelRetry
	modelUsage
	modelUsageKnown // and the three bits after it: one per usage field
)

// toolBytes copies a tool event's call ID and payload into the text
// chunks. l.appendMu must be held, not l.mu.
func (l *Log) toolBytes(t *Tool) toolRec {
	var r toolRec
	var body json.RawMessage
	if t.Call != nil {
		r.started = true
		r.id = put(l, t.Call.ID)
		body = t.Call.Arguments
	} else {
		r.id = put(l, t.CallID)
	}
	if t.Call == nil {
		body = t.Result
	}
	r.bodyNil = body == nil
	if len(body) <= maxCopied {
		r.body = put(l, body)
	}
	return r
}

// toolRec completes r, the record of t: the rest needs l.mu, held.
func (l *Log) toolRec(r toolRec, t *Tool) toolRec {
	r.masked = t.Masked
	if t.Call != nil {
		r.name, r.sandbox = l.intern(t.Call.Name), l.intern(t.Call.Sandbox)
		if len(t.Call.Arguments) > maxCopied {
			l.bigs = append(l.bigs, t.Call.Arguments)
			r.big = uint32(len(l.bigs))
		}
		return r
	}
	r.name = l.intern(t.Name)
	if len(t.Result) > maxCopied {
		l.bigs = append(l.bigs, t.Result)
		r.big = uint32(len(l.bigs))
	}
	return r
}

// tool is the Tool r is.
func (l *Log) tool(r *toolRec) Tool {
	var body json.RawMessage
	switch {
	case r.big > 0:
		body = l.bigs[r.big-1]
	case !r.bodyNil:
		body = l.bytes(r.body)
	}
	id := string(l.bytes(r.id))
	if r.started {
		return Tool{Call: &event.Call{ID: id, Name: l.strs[r.name], Arguments: body, Sandbox: l.strs[r.sandbox]}, Masked: r.masked}
	}
	return Tool{CallID: id, Name: l.strs[r.name], Result: body, Masked: r.masked}
}

// modelRec is the record of m; l.mu must be held.
func (l *Log) modelRec(m *Model) modelRec {
	r := modelRec{provider: l.intern(m.Provider), model: l.intern(m.Model), status: l.intern(m.Status), reason: l.intern(string(m.FinishReason))}
	if m.Finished {
		r.flags |= modelFinished
	}
	if m.Route != nil {
		l.routes = append(l.routes, m.Route)
		r.route = uint32(len(l.routes))
	}
	if m.OutputBytes != nil {
		r.flags |= modelOutputBytes
		r.outputBytes = *m.OutputBytes
	}
	if m.RetryInMS != nil {
		r.flags |= modelRetry
		r.retryInMS = *m.RetryInMS
	}
	if u := m.Usage; u != nil {
		r.flags |= modelUsage
		for i, p := range [...]*uint64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens} {
			if p != nil {
				r.flags |= modelUsageKnown << i
				r.usage[i] = *p
			}
		}
	}
	return r
}

// model is the Model r is.
func (l *Log) model(r *modelRec) Model {
	m := Model{Finished: r.flags&modelFinished != 0, Provider: l.strs[r.provider], Model: l.strs[r.model], Status: l.strs[r.status]}
	m.FinishReason = model.FinishReason(l.strs[r.reason])
	if r.route > 0 {
		m.Route = l.routes[r.route-1]
	}
	if r.flags&modelOutputBytes != 0 {
		v := r.outputBytes
		m.OutputBytes = &v
	}
	if r.flags&modelRetry != 0 {
		v := r.retryInMS
		m.RetryInMS = &v
	}
	if r.flags&modelUsage != 0 {
		var u [4]*uint64
		for i := range u {
			if r.flags&(modelUsageKnown<<i) != 0 {
				v := r.usage[i]
				u[i] = &v
			}
		}
		m.Usage = &event.OutcomeUsage{InputTokens: u[0], OutputTokens: u[1], CacheReadTokens: u[2], CacheWriteTokens: u[3]}
	}
	return m
}

// put copies b into the text chunks. l.appendMu must be held, not l.mu.
func put[B ~string | ~[]byte](l *Log, b B) span {
	if len(b) == 0 {
		return span{}
	}
	if len(l.text) == 0 || len(l.text[l.t])-l.fill < len(b) {
		l.nextText(len(b))
	}
	sp := span{chunk: uint32(l.t), off: uint32(l.fill), n: uint32(len(b))}
	l.fill += copy(l.text[l.t][l.fill:], b)
	return sp
}

// bytes are the bytes at sp, not copied: published bytes are never
// written again.
func (l *Log) bytes(sp span) []byte {
	if sp.n == 0 {
		return []byte{}
	}
	return l.text[sp.chunk][sp.off : sp.off+sp.n : sp.off+sp.n]
}

// intern returns s's index in l.strs, adding it; l.mu must be held.
func (l *Log) intern(s string) uint32 {
	// Most records repeat the strings of the record before.
	for i := len(l.strs) - 1; i >= max(0, len(l.strs)-4); i-- {
		if l.strs[i] == s {
			return uint32(i)
		}
	}
	if i, ok := l.strIdx[s]; ok {
		return i
	}
	if l.strIdx == nil {
		l.strIdx = map[string]uint32{}
	}
	l.strIdx[s] = uint32(len(l.strs))
	l.strs = append(l.strs, s)
	return uint32(len(l.strs) - 1)
}
