package schema

// keywordClass says how Compile treats a keyword.
type keywordClass uint8

const (
	classApplied    keywordClass = iota + 1 // validated by the subset
	classAnnotation                         // allowed and ignored (value shape still checked)
	classRejected                           // recognized but outside the subset
)

// classOf returns how Compile treats keyword k, or 0 when k is unknown.
// The switch is the whole whitelist: anything not listed here, and not
// rejected with a reason by rejectReason, is rejected as unknown, so no
// keyword is ever silently ignored.
func classOf(k string) keywordClass {
	switch k {
	case "$schema", "$comment", "title", "description", "default", "examples",
		"readOnly", "writeOnly", "deprecated", "format":
		return classAnnotation
	case "$defs", "$ref",
		"type", "enum", "const",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"minLength", "maxLength",
		"properties", "required", "additionalProperties", "propertyNames",
		"dependentRequired", "dependentSchemas", "minProperties", "maxProperties",
		"items", "prefixItems", "minItems", "maxItems",
		"allOf", "anyOf", "oneOf", "not", "if", "then", "else":
		return classApplied
	}
	if rejectReason(k) != "" {
		return classRejected
	}
	return 0
}

// rejectReason returns why a recognized keyword outside the subset is
// rejected, saying what to use instead, or "" for any other keyword.
func rejectReason(k string) string {
	switch k {
	case "pattern":
		return "regular expressions are not supported; constrain the string with enum, const, minLength or maxLength"
	case "patternProperties":
		return "regular-expression property matching is not supported; list the properties under \"properties\""
	case "uniqueItems":
		return "uniqueItems is not supported (its cost grows with the square of the array); drop it or check uniqueness in the tool"
	case "contains", "minContains", "maxContains":
		return k + " is not supported; describe every item with items or prefixItems"
	case "unevaluatedProperties":
		return "unevaluatedProperties is not supported; use additionalProperties"
	case "unevaluatedItems":
		return "unevaluatedItems is not supported; use items with prefixItems"
	case "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor":
		return "dynamic references and anchors are not supported; use a local \"$ref\" into \"$defs\""
	case "$anchor":
		return "anchors are not supported; refer to the subschema as \"#/$defs/NAME\""
	case "$id":
		return "$id is not supported; schemas are anonymous and \"$ref\" must point into \"$defs\""
	case "$vocabulary":
		return "custom vocabularies are not supported; only the Draft 2020-12 subset applies"
	case "definitions":
		return "\"definitions\" is the Draft 7 spelling; use \"$defs\""
	case "dependencies":
		return "\"dependencies\" is a Draft 7 keyword; use dependentRequired or dependentSchemas"
	case "additionalItems":
		return "\"additionalItems\" is a Draft 7 keyword; use prefixItems with items"
	case "contentEncoding", "contentMediaType", "contentSchema":
		return "content keywords are not supported; validate decoded content in the tool"
	}
	return ""
}

// draft202012 is the only accepted "$schema" value; a trailing empty
// fragment is tolerated because generators commonly write one.
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// typeSet is a bit set of JSON Schema type names.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeString
	typeInteger
)

// typeBit returns the bit for a type name, or 0 for an unknown name.
func typeBit(name string) typeSet {
	switch name {
	case "null":
		return typeNull
	case "boolean":
		return typeBoolean
	case "object":
		return typeObject
	case "array":
		return typeArray
	case "number":
		return typeNumber
	case "string":
		return typeString
	case "integer":
		return typeInteger
	}
	return 0
}

// has reports whether the instance v is one of the types in t.
func (t typeSet) has(v *value) bool {
	switch v.kind {
	case kindNull:
		return t&typeNull != 0
	case kindBool:
		return t&typeBoolean != 0
	case kindObject:
		return t&typeObject != 0
	case kindArray:
		return t&typeArray != 0
	case kindString:
		return t&typeString != 0
	default:
		return t&typeNumber != 0 || t&typeInteger != 0 && v.num.isInteger()
	}
}
