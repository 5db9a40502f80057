package eventlog

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/event"
)

// The records a turn adds hold no pointer, so the collector never scans
// them however long the task.
func TestTurnRecordsHoldNoPointer(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[toolRec](), reflect.TypeFor[modelRec](), reflect.TypeFor[logEntry]()} {
		if hasPointers(typ) {
			t.Errorf("%v holds a pointer", typ)
		}
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return false
	}
	return true
}

// Every field of a tool or model event reads back as it was: nil and
// empty payloads apart, a payload too long to copy, usage with some
// counts unknown, and no route.
func TestEventLogRecordsKeepEveryField(t *testing.T) {
	lt := newLogUnderTest()
	hdr := &Header{RunID: "r"}
	long := []byte(`"` + strings.Repeat("x", maxCopied) + `"`)
	in, cached := uint64(7), uint64(0)
	tools := []*Tool{
		{Call: &event.Call{ID: "call_1_0", Name: "fs.write", Arguments: long, Sandbox: ""}},
		{Call: &event.Call{ID: "", Name: "", Arguments: nil}},
		{Call: &event.Call{ID: "call_2_0", Name: "fs.read", Arguments: []byte{}}, Masked: 2},
		{CallID: "call_1_0", Name: "fs.write", Result: long, Masked: 1},
		{CallID: "call_2_0", Name: "fs.read", Result: nil},
	}
	models := []*Model{
		{Provider: "openai", Model: "gpt"},
		{Finished: true, Status: "completed", FinishReason: "tool_calls", Usage: &event.OutcomeUsage{InputTokens: &in, CacheReadTokens: &cached}},
		{Finished: true, Status: "failed"},
	}
	var want []event.EventData
	seq := uint64(0)
	st := func() (Stamp, error) { seq++; return Stamp{RootSeq: seq, Seq: seq}, nil }
	for _, tl := range tools {
		lt.l.AddTool(st, hdr, tl)
		want = append(want, tl.Data())
	}
	for _, m := range models {
		lt.l.AddModel(st, hdr, m)
		want = append(want, m.Data())
	}
	lt.task.Lock()
	defer lt.task.Unlock()
	for i, w := range want {
		if got := lt.l.At(i).EventData; !reflect.DeepEqual(got, w) {
			t.Fatalf("event %d: %+v, want %+v", i, got, w)
		}
	}
	// Empty arguments read back empty, not nil.
	if got := lt.l.At(2).Call.Arguments; got == nil || len(got) != 0 {
		t.Fatalf("empty arguments read back as %#v", got)
	}
	tools[3].Result[1] = 'y' // too long to copy: kept where it was
	if r := lt.l.At(3).Result; !bytes.Equal(r, tools[3].Result) {
		t.Fatal("a long result was copied")
	}
}
