package ledger

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"slices"
)

// VolatileStore is a [Store] that can also keep records volatile: visible to
// every later reader on this host once AppendVolatile returns, even after
// the writing process is killed, but not guaranteed to survive a power loss
// or an OS crash. A volatile write costs no fsync and is not a barrier.
// (PostgreSQL's synchronous_commit = off is the same promise: it survives a
// backend crash, not a server crash.)
//
// It serves records whose only purpose is to outlive the host process, such
// as a [ProcessGroupRecord]: no process survives a reboot, so a record of
// one needs no more. [Root.RecordProcessGroup] uses it when the store has
// it and spends a barrier otherwise (a wrapper that embeds a Store hides
// it: forward AppendVolatile too).
//
// The contract: recs are a task's records in N order, and a later Append
// may carry the same records again (same TaskID and N), which the store
// keeps once. Records returns a task's durable records followed by its
// volatile ones that continue them without a gap, so what a reader sees of
// a task is still a prefix of its records; a later barrier makes volatile
// records durable. AppendVolatile must not retain recs itself.
type VolatileStore interface {
	Store
	AppendVolatile(ctx context.Context, recs []Record) error
}

// The sidecar of a [Bolt] store keeps its volatile records, one line each:
// the CRC-32C of the record's JSON in 8 lower-case hex digits, a space, the
// JSON (which never holds a raw newline) and a newline. A line that does not
// check out (a write torn by a kill, a tail lost in a power failure) is
// skipped; a last line without its newline is torn and ignored. The table
// is crc32's own, built on first use (crc32.MakeTable keeps it): built by
// this package's initialiser it cost 9 KB and 0.15 ms at the start of
// every pablo process, whatever its command (GODEBUG=inittrace=1).

// appendVolatileLine appends r's sidecar line to b.
func appendVolatileLine(b []byte, r *Record) ([]byte, error) {
	v, err := encodeRecord(r)
	if err != nil {
		return b, err
	}
	var sum [4]byte
	c := crc32.Checksum(v, crc32.MakeTable(crc32.Castagnoli))
	sum[0], sum[1], sum[2], sum[3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, ' ')
	b = append(b, v...)
	return append(b, '\n'), nil
}

// decodeVolatile returns the records of every sound line of a sidecar, in
// file order, and how many lines it skipped.
func decodeVolatile(data []byte) (recs []Record, skipped int) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return recs, skipped + 1 // torn: its newline never came
		}
		line := data[:i]
		data = data[i+1:]
		r, ok := decodeVolatileLine(line)
		if !ok {
			skipped++
			continue
		}
		recs = append(recs, r)
	}
	return recs, skipped
}

func decodeVolatileLine(line []byte) (Record, bool) {
	var sum [4]byte
	if len(line) < 10 || line[8] != ' ' {
		return Record{}, false
	}
	if n, err := hex.Decode(sum[:], line[:8]); err != nil || n != 4 {
		return Record{}, false
	}
	v := line[9:]
	c := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	if crc32.Checksum(v, crc32.MakeTable(crc32.Castagnoli)) != c {
		return Record{}, false
	}
	var r Record
	if err := json.Unmarshal(v, &r); err != nil || r.TaskID == "" || r.N == 0 {
		return Record{}, false
	}
	return r, true
}

// volatileSet holds volatile records by task, each task's in N order
// without duplicates. It is not safe for concurrent use.
type volatileSet struct {
	tasks map[string][]Record
}

func (v *volatileSet) add(recs []Record) {
	for i := range recs {
		r := recs[i]
		if v.tasks == nil {
			v.tasks = map[string][]Record{}
		}
		list := v.tasks[r.TaskID]
		if n := len(list); n == 0 || list[n-1].N < r.N {
			v.tasks[r.TaskID] = append(list, r)
			continue
		}
		j, found := slices.BinarySearchFunc(list, r.N, func(x Record, n uint64) int { return cmp.Compare(x.N, n) })
		if !found {
			v.tasks[r.TaskID] = slices.Insert(list, j, r)
		}
	}
}

func (v *volatileSet) empty() bool { return len(v.tasks) == 0 }

// prune drops taskID's records up to N upTo: a barrier made them durable.
func (v *volatileSet) prune(taskID string, upTo uint64) {
	list, ok := v.tasks[taskID]
	if !ok {
		return
	}
	i := 0
	for i < len(list) && list[i].N <= upTo {
		i++
	}
	if i == len(list) {
		delete(v.tasks, taskID)
		return
	}
	v.tasks[taskID] = slices.Delete(list, 0, i)
}

// continuing returns taskID's volatile records that continue a durable
// prefix ending at N last, up to the first gap.
func (v *volatileSet) continuing(taskID string, last uint64) []Record {
	var out []Record
	for _, r := range v.tasks[taskID] {
		switch {
		case r.N <= last:
			continue
		case r.N == last+1:
			out = append(out, r)
			last = r.N
		default:
			return out
		}
	}
	return out
}

// merge appends to durable (a task's durable records in N order) the
// volatile records that continue it.
func (v *volatileSet) merge(taskID string, durable []Record) []Record {
	var last uint64
	if n := len(durable); n > 0 {
		last = durable[n-1].N
	}
	return append(durable, v.continuing(taskID, last)...)
}

// result finds a result among the volatile records.
func (v *volatileSet) result(ref ResultRef) (json.RawMessage, bool) {
	for _, list := range v.tasks {
		for i := range list {
			if r := &list[i]; r.Kind == RecordResult && r.Result != nil && r.Result.ID == ref {
				return r.Result.Data, true
			}
		}
	}
	return nil, false
}
