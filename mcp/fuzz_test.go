package mcp

import (
	"encoding/json"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// FuzzToolDefinition feeds arbitrary tools/list entries through parsing,
// digesting and schema preparation: nothing panics, a prepared input
// schema always compiles again as the engine will compile it, and the
// dialect rewrite never changes anything but the root "$schema".
func FuzzToolDefinition(f *testing.F) {
	f.Add([]byte(`{"name":"echo","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"m":{"type":"string"}},"required":["m"]}}`))
	f.Add([]byte(`{"name":"x","inputSchema":{"type":"object","anyOf":[{"required":["a"]}]},"outputSchema":{"type":"object"}}`))
	f.Add([]byte(`{"name":"x","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","$schema":"x","type":"object"}}`))
	f.Add([]byte(`{"name":"x","inputSchema":{"type":"object","properties":{"$ref":{"$ref":"#/$defs/a"}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := parseDefinition(raw)
		if err != nil {
			return
		}
		if d2, err := parseDefinition(raw); err != nil || d2.digest != d.digest {
			t.Fatal("the digest is not deterministic")
		}
		text, sc, err := prepareSchema(d.InputSchema, true)
		if err != nil {
			return
		}
		if _, err := authority.NewContracts(nil, []authority.ToolSpec{{ID: "mcp/s/x", InputSchema: text}}); err != nil {
			t.Fatalf("a prepared schema does not compile for the engine: %v", err)
		}
		_ = sc.Validate([]byte(`{}`))
	})
}

// FuzzCallResult feeds arbitrary tools/call results through result
// parsing with and without an output schema: nothing panics, and an
// accepted result only ever holds text and an object.
func FuzzCallResult(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}]}`), true)
	f.Add([]byte(`{"content":[{"type":"image","data":"AA=="}],"isError":true}`), false)
	f.Add([]byte(`{"content":[],"structuredContent":{"n":1}}`), true)
	_, out, err := prepareSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), false)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte, withSchema bool) {
		c := &Catalog{}
		tl := &tool{id: "mcp/s/x"}
		if withSchema {
			tl.output = out
		}
		res, err := c.parseResult(tl, raw)
		if err != nil {
			return
		}
		if res.Structured != nil {
			var m map[string]any
			if json.Unmarshal(res.Structured, &m) != nil {
				t.Fatalf("accepted non-object structured content %s", res.Structured)
			}
		}
	})
}
