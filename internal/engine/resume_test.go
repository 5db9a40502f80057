package engine

import (
	"encoding/json"
	"testing"

	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// TestCanonicalResponseIsWhatTheGeneralWayStores: the recorded model
// response written by hand is byte for byte the canonical form the ledger
// makes of the same record through encoding/json, so its reference is the
// same whichever way a response is recorded.
func TestCanonicalResponseIsWhatTheGeneralWayStores(t *testing.T) {
	sec := &redact.Set{}
	sec.Add("hunter2-secret")
	for _, resp := range []*model.Response{
		{},
		{Text: "plain"},
		{Text: "<b> & \u2028 \"quoted\" \\ \n\t\x01 \xff bad é ☃", ToolCalls: []model.ToolCall{
			{ID: "c1", Name: "fs_read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			{ID: "c<2>", Name: "x&y", Arguments: json.RawMessage(`{ "b" : 1, "a" : "hunter2-secret <&>" }`)},
			{ID: "", Name: "", Arguments: nil},
			{ID: "c\xff", Name: "n\u00e9", Arguments: json.RawMessage(`{"s":"\u003c\ud83d\ude00"}`)},
		}},
		{Text: "the key is hunter2-secret", Reasoning: []model.Reasoning{
			{Provider: "p<1>", Data: json.RawMessage(`{"z":1,"a":[true,null,"x<y"]}`)},
			{Provider: "p2", Data: json.RawMessage(`"text"`)},
		}},
	} {
		got, ok := canonicalResponse(sec, resp)
		if !ok {
			t.Fatalf("%+v: not written by hand", resp)
		}
		general, err := json.Marshal(recordedTurnOf(sec, resp))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ledger.Canonical(general)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("by hand:\n%s\nthe general way:\n%s", got, want)
		}
		if again, _ := ledger.Canonical(got); string(again) != string(got) {
			t.Errorf("not canonical: %s", got)
		}
	}
	// Reasoning data the canonical form refuses goes the general way.
	for _, data := range []string{"", `{"a":1,"a":2}`, `{`} {
		if _, ok := canonicalResponse(sec, &model.Response{Reasoning: []model.Reasoning{{Provider: "p", Data: json.RawMessage(data)}}}); ok {
			t.Errorf("reasoning data %q was written by hand", data)
		}
	}
}
