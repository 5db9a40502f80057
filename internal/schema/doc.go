// Package schema compiles and applies the bounded JSON Schema subset that
// Pablo uses for native tool arguments, MCP tool input and output schemas,
// child output schemas and final-output validation.
//
// # The subset
//
// The dialect is Draft 2020-12; a missing "$schema" means that dialect and any
// other value is rejected. Supported keywords: boolean schemas; type, enum,
// const; minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf;
// minLength, maxLength; properties, required, additionalProperties,
// propertyNames, dependentRequired, dependentSchemas, minProperties,
// maxProperties; items (schema form), prefixItems, minItems, maxItems; allOf,
// anyOf, oneOf, not, if/then/else; "$defs" and "$ref" as a local JSON pointer
// into the root "$defs" ("#/$defs/NAME", no percent-encoding, no cycles).
// The annotations $comment, title, description, default, examples, readOnly,
// writeOnly, deprecated and format are allowed and ignored (format is never
// asserted).
//
// Everything else is rejected by [Compile] with a [CompileError] naming the
// keyword and its location: unknown keywords, pattern, patternProperties,
// uniqueItems, contains, unevaluated*, dynamic references, $anchor, $id,
// $vocabulary, remote or file references, Draft 7 spellings. Keywords are
// checked on the raw JSON, so nothing is silently dropped or loosened.
//
// # Bounds and work
//
// [Limits] bounds schema admission (bytes, JSON values, nesting, expanded
// visits) and instances (bytes, nesting, values). Validation work is charged
// up front as (expanded visits + comparison payload bytes) × instance bytes,
// an upper bound on what validation can do; an instance over [Limits.MaxWork]
// is not validated.
//
// # Exactness
//
// Schema and instance are parsed by this package's strict parser: invalid
// UTF-8, unpaired surrogate escapes and duplicate object keys are rejected,
// and numbers are kept as exact decimals, so const, enum, bounds and
// multipleOf never round big integers or decimals through float64. A number
// is an integer when it has no fractional part (1.0 and 1e2 are integers).
//
// # Diagnostics
//
// A [Result] carries at most eight [Diagnostic] values, each a code and two
// JSON pointers (instance and schema) of at most 256 bytes, at most 2,048
// bytes in all. Diagnostics never contain instance values; instance paths do
// contain the instance's object keys.
//
// The validator is this package's own rather than github.com/google/jsonschema-go's,
// which rounds numbers through float64, puts instance values in its error
// strings and has no work bound; the tests use jsonschema-go as an oracle.
package schema
