package schema

import (
	"errors"
	"strings"
	"testing"
)

// TestCompileRejectsOutsideSubset defends the whitelist: every rejected
// keyword, reference form and dialect fails with ErrUnsupported, naming the
// keyword and the location of the schema object that holds it.
func TestCompileRejectsOutsideSubset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, keyword, path string
	}{
		{"unknown keyword", `{"typo":1}`, "typo", ""},
		{"unknown keyword nested", `{"properties":{"a":{"x-extension":true}}}`, "x-extension", "/properties/a"},
		{"pattern", `{"type":"string","pattern":"^a"}`, "pattern", ""},
		{"patternProperties", `{"patternProperties":{"^a":true}}`, "patternProperties", ""},
		{"uniqueItems", `{"items":{"uniqueItems":true}}`, "uniqueItems", "/items"},
		{"uniqueItems false too", `{"uniqueItems":false}`, "uniqueItems", ""},
		{"contains", `{"contains":{"type":"string"}}`, "contains", ""},
		{"minContains", `{"minContains":1}`, "minContains", ""},
		{"maxContains", `{"maxContains":1}`, "maxContains", ""},
		{"unevaluatedProperties", `{"unevaluatedProperties":false}`, "unevaluatedProperties", ""},
		{"unevaluatedItems", `{"unevaluatedItems":false}`, "unevaluatedItems", ""},
		{"dynamicRef", `{"$dynamicRef":"#meta"}`, "$dynamicRef", ""},
		{"dynamicAnchor", `{"$defs":{"a":{"$dynamicAnchor":"meta"}}}`, "$dynamicAnchor", "/$defs/a"},
		{"recursiveRef", `{"$recursiveRef":"#"}`, "$recursiveRef", ""},
		{"anchor", `{"$defs":{"a":{"$anchor":"x"}}}`, "$anchor", "/$defs/a"},
		{"id", `{"$id":"https://example.com/s"}`, "$id", ""},
		{"vocabulary", `{"$vocabulary":{"https://example.com/v":true}}`, "$vocabulary", ""},
		{"definitions", `{"definitions":{}}`, "definitions", ""},
		{"dependencies", `{"dependencies":{}}`, "dependencies", ""},
		{"additionalItems", `{"additionalItems":false}`, "additionalItems", ""},
		{"contentMediaType", `{"contentMediaType":"application/json"}`, "contentMediaType", ""},
		{"array items", `{"items":[true]}`, "items", ""},
		{"multipleOf with 20 digits", `{"multipleOf":1.2345678901234567891}`, "multipleOf", ""},
		{"draft 7", `{"$schema":"http://json-schema.org/draft-07/schema#"}`, "$schema", ""},
		{"draft 2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema"}`, "$schema", ""},
		{"custom metaschema", `{"$schema":"https://example.com/my-meta"}`, "$schema", ""},
		{"schema below root", `{"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`, "$schema", "/properties/a"},
		{"ref http", `{"$ref":"http://example.com/schema.json"}`, "$ref", ""},
		{"ref https fragment", `{"$ref":"https://example.com/s#/$defs/a"}`, "$ref", ""},
		{"ref file", `{"$ref":"file:///etc/passwd"}`, "$ref", ""},
		{"ref relative file", `{"$ref":"other.json#/$defs/a"}`, "$ref", ""},
		{"ref percent-encoded", `{"$defs":{"a b":true},"$ref":"#/$defs/a%20b"}`, "$ref", ""},
		{"ref raw space", `{"$defs":{"a b":true},"$ref":"#/$defs/a b"}`, "$ref", ""},
		{"ref non-ascii", `{"$defs":{"é":true},"$ref":"#/$defs/é"}`, "$ref", ""},
		{"ref anchor", `{"$defs":{"a":true},"$ref":"#a"}`, "$ref", ""},
		{"ref root", `{"properties":{"next":{"$ref":"#"}}}`, "$ref", "/properties/next"},
		{"ref outside defs", `{"properties":{"a":true,"b":{"$ref":"#/properties/a"}}}`, "$ref", "/properties/b"},
		{"ref bad tilde", `{"$defs":{"a":true},"$ref":"#/$defs/~2"}`, "$ref", ""},
		{"ref self cycle", `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "$ref", "/$defs/a"},
		{"ref unused cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"items":{"$ref":"#/$defs/a"}}}}`, "$ref", ""},
		{"ref recursive def", `{"$defs":{"node":{"properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`, "$ref", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile([]byte(tt.schema), Limits{})
			var ce *CompileError
			if !errors.As(err, &ce) || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Compile(%s) = %v, want an ErrUnsupported CompileError", tt.schema, err)
			}
			if ce.Keyword != tt.keyword {
				t.Fatalf("Keyword = %q, want %q (%v)", ce.Keyword, tt.keyword, err)
			}
			// Cycle locations depend on which member closes the loop; the
			// rows with an empty path accept any location for refs.
			if tt.path != "" || tt.keyword != "$ref" {
				if ce.Path != tt.path {
					t.Fatalf("Path = %q, want %q (%v)", ce.Path, tt.path, err)
				}
			}
			if !strings.Contains(err.Error(), tt.keyword) || ce.Reason == "" {
				t.Fatalf("message %q does not name %q or lacks a reason", err, tt.keyword)
			}
		})
	}
}

// TestCompileRejectsMalformedKeywordValues defends keyword value shapes:
// they fail with ErrInvalid rather than being ignored.
func TestCompileRejectsMalformedKeywordValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, keyword string
	}{
		{"not json", `{"type":`, ""},
		{"trailing data", `{} {}`, ""},
		{"duplicate key", `{"type":"string","type":"integer"}`, ""},
		{"schema is a number", `1`, ""},
		{"subschema is a string", `{"not":"x"}`, ""},
		{"type unknown", `{"type":"int"}`, "type"},
		{"type empty list", `{"type":[]}`, "type"},
		{"type repeated", `{"type":["null","null"]}`, "type"},
		{"type number", `{"type":1}`, "type"},
		{"enum object", `{"enum":{}}`, "enum"},
		{"minimum string", `{"minimum":"1"}`, "minimum"},
		{"multipleOf zero", `{"multipleOf":0}`, "multipleOf"},
		{"multipleOf negative", `{"multipleOf":-2}`, "multipleOf"},
		{"minLength negative", `{"minLength":-1}`, "minLength"},
		{"maxItems fraction", `{"maxItems":1.5}`, "maxItems"},
		{"required not array", `{"required":"a"}`, "required"},
		{"required repeated", `{"required":["a","a"]}`, "required"},
		{"required non-string", `{"required":[1]}`, "required"},
		{"dependentRequired shape", `{"dependentRequired":{"a":"b"}}`, "dependentRequired"},
		{"properties array", `{"properties":[]}`, "properties"},
		{"allOf empty", `{"allOf":[]}`, "allOf"},
		{"anyOf object", `{"anyOf":{}}`, "anyOf"},
		{"ref number", `{"$ref":1}`, "$ref"},
		{"ref missing target", `{"$defs":{},"$ref":"#/$defs/none"}`, "$ref"},
		{"ref to enum value", `{"$defs":{"a":{"enum":[1]}},"$ref":"#/$defs/a/enum/0"}`, "$ref"},
		{"title number", `{"title":1}`, "title"},
		{"readOnly string", `{"readOnly":"yes"}`, "readOnly"},
		{"examples object", `{"examples":{}}`, "examples"},
		{"schema number", `{"$schema":7}`, "$schema"},
		{"huge exponent", `{"maximum":1e9999999999}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile([]byte(tt.schema), Limits{})
			var ce *CompileError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Compile(%s) = %v, want an ErrInvalid CompileError", tt.schema, err)
			}
			if ce.Keyword != tt.keyword {
				t.Fatalf("Keyword = %q, want %q (%v)", ce.Keyword, tt.keyword, err)
			}
		})
	}
}

// TestAnnotationContentIsNotScannedAsSchema checks that values of const,
// enum, default and examples are data: keywords inside them are not
// keywords.
// TestMultipleOfAtDigitBound checks the 19-digit bound at the limit.
func TestMultipleOfAtDigitBound(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"multipleOf":9999999999999999999}`)
	if r := s.Validate([]byte(`19999999999999999998`)); !r.Valid {
		t.Fatalf("2×m rejected: %+v", r)
	}
	if r := s.Validate([]byte(`19999999999999999999`)); r.Valid {
		t.Fatal("2×m+1 accepted")
	}
}

func TestAnnotationContentIsNotScannedAsSchema(t *testing.T) {
	t.Parallel()
	src := `{"const":{"pattern":"x"},"enum":[{"$ref":"http://x"}],"default":{"$id":"y"},"examples":[{"uniqueItems":true}]}`
	if _, err := Compile([]byte(src), Limits{}); err != nil {
		t.Fatalf("Compile: %v", err)
	}
}

// TestPropertyNamedLikeKeywordIsAllowed checks that property names are not
// mistaken for keywords.
func TestPropertyNamedLikeKeywordIsAllowed(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties":{"pattern":{"type":"string"},"$ref":{"type":"integer"}},"required":["pattern"]}`)
	if r := s.Validate([]byte(`{"pattern":"a","$ref":1}`)); !r.Valid {
		t.Fatalf("Validate = %+v, want valid", r)
	}
}

// TestDigestIgnoresWhitespaceAndKeyOrder defends the cache key and the
// record's schema_sha256.
func TestDigestIgnoresWhitespaceAndKeyOrder(t *testing.T) {
	t.Parallel()
	a := mustCompile(t, `{"type":"object","properties":{"b":{"type":"string"},"a":{}}}`)
	b := mustCompile(t, "{ \"properties\" : { \"a\":{}, \"b\":{\"type\":\"string\"} },\n \"type\":\"object\" }")
	c := mustCompile(t, `{"type":"object","properties":{"b":{"type":"integer"},"a":{}}}`)
	if a.Digest() != b.Digest() {
		t.Fatalf("digests differ for equal schemas: %s vs %s", a.Digest(), b.Digest())
	}
	if a.Digest() == c.Digest() {
		t.Fatal("digests equal for different schemas")
	}
	if !strings.HasPrefix(a.Digest(), "sha256:") || len(a.Digest()) != 7+64 {
		t.Fatalf("digest %q is not sha256:<64 hex>", a.Digest())
	}
	if got := string(a.Canonical()); got != `{"properties":{"a":{},"b":{"type":"string"}},"type":"object"}` {
		t.Fatalf("Canonical = %s", got)
	}
	// Known answer: sha256 of the canonical text, fixed so the digest does not drift.
	if got := mustCompile(t, `{ "type" : "string" }`).Digest(); got != "sha256:"+sha256Hex(`{"type":"string"}`) {
		t.Fatalf("Digest = %s", got)
	}
	if string(b.Raw()) == string(a.Raw()) {
		t.Fatal("Raw should keep the text as given")
	}
}
