package mcp

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pabloagent/pablo/internal/jsonrpc"
)

// decodeGeneral is decodeMessage without its direct path: the decoder and
// the envelope check.
func decodeGeneral(data []byte) (envelope, error) {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return e, err
	}
	return e, jsonrpc.CheckEnvelope(data)
}

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`,
	` { "id" : "a\"b" , "result" : [1, {"x": "y"}] , "jsonrpc": "2.0" } `,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`,
	`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
	`{"id":null,"method":null,"params":null,"result":null}`,
	`{"id":1,"error":{"code":-32601,"message":"m"}}`,
	`{"id":1,"ID":2,"result":{}}`,
	`{"id":1,"id":2,"result":{}}`,
	`{"iſ":1,"result":{}}`,
	`{"\u0069d":1,"result":{}}`,
	`{"id":{"x":1},"result":{}}`,
	`{"id":true,"result":{}}`,
	`{"id":1,"method":"a\u0062","params":{}}`,
	"{\"id\":1,\"method\":\"caf\xc3\xa9\"}",
	"{\"id\":1,\"method\":\"bad\xff\"}",
	`{"id":1,"method":2}`,
	`{"id":1.5e3,"result":"x","extra":{"id":2}}`,
	`{"id":1,"result":{}}trailing`,
	`[{"id":1}]`, `null`, `"x"`, `{}`, `{"id":1,"result":`, `{"id":-0,"result":{}}`,
}

// TestDirectDecodeIsTheDecoders holds decodeMessage's direct path to the
// general one: every message it takes decodes to the same envelope, and
// it takes none the general path refuses.
func TestDirectDecodeIsTheDecoders(t *testing.T) {
	direct := 0
	for _, s := range decodeSeeds {
		if checkDirectDecode(t, []byte(s)) {
			direct++
		}
	}
	if direct < 5 {
		t.Fatalf("only %d of the seeds took the direct path", direct)
	}
}

func checkDirectDecode(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := decodeCommon(data)
	if !ok {
		return false
	}
	want, err := decodeGeneral(data)
	if err != nil {
		t.Fatalf("%q: the direct path took a message the decoder refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: direct %+v, decoder %+v", data, got, want)
	}
	return true
}

func FuzzDirectDecodeIsTheDecoders(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDirectDecode(t, data) })
}

var bodySeeds = []string{
	`{"content":[{"type":"text","text":"hello"}]}`,
	`{"content":[{"type":"text","text":"a\nb \u00e9 \"q\""},{"type":"text","text":"caf` + "\xc3\xa9" + `","annotations":{"x":[1]}}],"isError":false}`,
	` { "structuredContent" : {"n": 1, "s": [true, null]}, "content" : [ ] , "isError" : true } `,
	`{"content":[],"structuredContent":null}`,
	`{"content":null}`, `{"content":[{"type":"text","text":null}]}`, `{"content":[{"type":null}]}`,
	`{"Content":[{"type":"text","text":"x"}]}`, `{"content":[{"TYPE":"text"}]}`, `{"content":[{"type":"text","text":"x","text":"y"}]}`,
	`{"content":[],"content":[{"type":"image"}]}`, `{"isError":1}`, `{"isError":null}`, `{"content":["x"]}`, `{"content":[1,2]}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"bad\xff\"}]}", `{"conten\u0074":[]}`, `{"_meta":{"progressToken":1},"content":[{"type":"image","data":"AA=="}]}`,
	`{"content":[{"type":"text","text":"x"}]}x`, `{"content":[{"type":"text","text":"x"}`, `[]`, `{}`,
}

// TestDirectResultDecodeIsTheDecoders holds parseResult's direct path to
// json.Unmarshal: every result it takes decodes to the same body.
func TestDirectResultDecodeIsTheDecoders(t *testing.T) {
	direct := 0
	for _, s := range bodySeeds {
		if checkDirectBody(t, []byte(s)) {
			direct++
		}
	}
	if direct < 4 {
		t.Fatalf("only %d of the seeds took the direct path", direct)
	}
}

func checkDirectBody(t *testing.T, raw []byte) bool {
	t.Helper()
	got, ok := decodeCallBodyDirect(raw)
	if !ok {
		return false
	}
	var want callBody
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%q: the direct path took a result the decoder refuses: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: direct %+v, decoder %+v", raw, got, want)
	}
	return true
}

func FuzzDirectResultDecodeIsTheDecoders(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDirectBody(t, raw) })
}
