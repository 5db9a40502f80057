package ledger

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestEventEncodingMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, rec := range []Record{
		{TaskID: "t", N: 7, Kind: RecordEvent, Time: at, Event: Event{RootSeq: 3, Seq: 2, RootID: "t", AgentID: "a", Type: "tool.started", Time: at, Payload: json.RawMessage(`{"a":[1,2]}`)}},
		{TaskID: "t", N: 1, Kind: RecordEvent, Time: at, Event: Event{RootSeq: 1, Seq: 1, RootID: "t", ParentID: "p", AgentID: "a", Type: "x", Time: at}},
		{TaskID: "t\"<&>\u2028\x01é", N: 1, Kind: RecordEvent, Time: at, Event: Event{RootSeq: 1, Seq: 1, RootID: "t", AgentID: "a\\b", Type: "ünïcode\n", Time: at, Payload: json.RawMessage(`"s"`)}},
	} {
		fast, err := encodeRecord(&rec)
		if err != nil {
			t.Fatal(err)
		}
		slow, _ := json.Marshal(&rec)
		var a, b Record
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s: %v", fast, err)
		}
		json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("fast %s\nslow %s", fast, slow)
		}
		if rec.TaskID == "t" && string(fast) != string(slow) {
			t.Fatalf("bytes differ:\nfast %s\nslow %s", fast, slow)
		}
	}
	bad := Record{TaskID: "t", N: 1, Kind: RecordEvent, Event: Event{Payload: json.RawMessage(`{`)}}
	if _, err := encodeRecord(&bad); err == nil {
		t.Fatal("invalid payload encoded")
	}
}
