package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/schema"
	"github.com/pabloagent/pablo/ledger"
)

// definition is one tool as tools/list declared it, read from raw JSON so
// that nothing the typed decoders drop (anyOf, oneOf, top-level enum,
// $schema, ...) is lost.
type definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Execution    *struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution,omitempty"`

	digest string
}

// listPage is one tools/list result.
type listPage struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// parseDefinition decodes one raw tool and computes its definition digest:
// SHA-256 of the canonical JSON of every member but _meta, so a change to
// the name, title, description, either schema, annotations or execution
// changes the digest.
func parseDefinition(raw json.RawMessage) (*definition, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, fmt.Errorf("tool is not a JSON object: %w", err)
	}
	var d definition
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("tool does not decode: %w", err)
	}
	delete(members, "_meta")
	b, err := json.Marshal(members)
	if err != nil {
		return nil, err
	}
	canon, err := ledger.Canonical(b)
	if err != nil {
		return nil, fmt.Errorf("tool is not canonical JSON: %w", err)
	}
	sum := sha256.Sum256(canon)
	d.digest = "sha256:" + hex.EncodeToString(sum[:])
	return &d, nil
}

// Digest returns the definition digest of a raw tools/list entry, the value
// a deployment pins. It is what `pablo mcp probe` prints.
func Digest(rawTool []byte) (string, error) {
	d, err := parseDefinition(rawTool)
	if err != nil {
		return "", err
	}
	return d.digest, nil
}

// draft07 spellings of the Draft 7 meta-schema URI, which many servers
// (every zod-based one) still declare.
var draft07 = map[string]bool{
	"http://json-schema.org/draft-07/schema#":  true,
	"http://json-schema.org/draft-07/schema":   true,
	"https://json-schema.org/draft-07/schema#": true,
	"https://json-schema.org/draft-07/schema":  true,
}

const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// prepareSchema turns a declared schema into the text the engine compiles:
//
//   - A root "$schema" naming Draft 7 is rewritten to Draft 2020-12 when the
//     document means the same under both, that is when it uses no "$ref"
//     (whose siblings Draft 7 ignores) and none of the Draft 7-only keywords
//     (which the subset rejects anyway). Otherwise it stays and the subset
//     rejects it.
//   - An input schema whose root lists properties, says nothing about
//     additional ones and composes nothing is closed with
//     "additionalProperties": false, so a call cannot carry fields the tool
//     did not declare. This only ever narrows.
//
// The result is compiled with the subset's limits; every error is a
// *schema.CompileError.
func prepareSchema(raw json.RawMessage, input bool) ([]byte, *schema.Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, nil, &schema.CompileError{Kind: schema.ErrBound, Reason: fmt.Sprintf("schema of %d bytes is larger than %d", len(raw), MaxSchemaBytes)}
	}
	text := []byte(raw)
	var root map[string]json.RawMessage
	if err := json.Unmarshal(raw, &root); err != nil {
		_, err := schema.Compile(raw, schema.Limits{})
		if err == nil {
			err = &schema.CompileError{Kind: schema.ErrInvalid, Reason: "a tool schema must be a JSON object"}
		}
		return nil, nil, err
	}
	if v, ok := root["$schema"]; ok {
		var uri string
		if json.Unmarshal(v, &uri) == nil && draft07[uri] && !bytes.Contains(raw, []byte(`"$ref"`)) {
			if t, ok := replaceRootMember(raw, "$schema", `"`+draft202012+`"`); ok {
				text = t
			}
		}
	}
	if input {
		var typ string
		json.Unmarshal(root["type"], &typ)
		if typ != "object" {
			return nil, nil, &schema.CompileError{Kind: schema.ErrUnsupported, Keyword: "type", Reason: `an MCP input schema must have "type": "object"`}
		}
		closable := root["properties"] != nil
		for _, k := range []string{"additionalProperties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "dependentSchemas", "propertyNames", "patternProperties", "unevaluatedProperties"} {
			if _, ok := root[k]; ok {
				closable = false
			}
		}
		if closable {
			i := bytes.IndexByte(text, '{')
			text = append(append(append([]byte{}, text[:i+1]...), `"additionalProperties":false,`...), text[i+1:]...)
		}
	}
	sc, err := schema.Compile(text, schema.Limits{MaxSchemaBytes: MaxSchemaBytes + 64})
	if err != nil {
		return nil, nil, err
	}
	return text, sc, nil
}

// replaceRootMember replaces the value of the root object's member key in
// raw, keeping every other byte, so duplicate keys and number spellings
// reach the subset's strict parser unchanged.
func replaceRootMember(raw []byte, key, value string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		end := dec.InputOffset()
		if k == key {
			seg := raw[start:end]
			colon := bytes.IndexByte(seg, ':')
			if colon < 0 {
				return nil, false
			}
			out := append([]byte{}, raw[:start+int64(colon)+1]...)
			out = append(out, value...)
			return append(out, raw[end:]...), true
		}
	}
	return nil, false
}

// schemaReason renders a compile error for a health report.
func schemaReason(which string, err error) string {
	var ce *schema.CompileError
	if errors.As(err, &ce) {
		loc := ce.Path
		if ce.Keyword != "" {
			loc = strings.TrimSuffix(loc, "/") + "/" + ce.Keyword
		}
		return fmt.Sprintf("%s schema is outside the supported subset at %q: %s", which, loc, ce.Reason)
	}
	return which + " schema: " + err.Error()
}
