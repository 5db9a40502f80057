package schema

// Limits bounds schema admission and instance validation. A field that is
// zero or negative takes its value from DefaultLimits, so Limits{} means the
// reference bounds and a caller overrides only what it sets.
type Limits struct {
	// MaxSchemaBytes bounds the raw schema text (UTF-8 bytes).
	MaxSchemaBytes int
	// MaxNodes bounds the number of JSON values in the schema document.
	MaxNodes int
	// MaxDepth bounds the nesting of arrays and objects in the schema
	// document; a scalar document has depth 0 and `{}` has depth 1.
	MaxDepth int
	// MaxVisits bounds the schema's expanded size: the number of subschemas
	// visited when every $ref is replaced by its target.
	MaxVisits int

	// MaxInstanceBytes bounds the instance text.
	MaxInstanceBytes int
	// MaxInstanceDepth bounds the nesting of arrays and objects in an
	// instance, counted like MaxDepth.
	MaxInstanceDepth int
	// MaxInstanceNodes bounds the number of JSON values in an instance.
	MaxInstanceNodes int
	// MaxWork bounds validation work, charged before validation as
	// (expanded visits + comparison payload bytes) × instance bytes.
	MaxWork uint64
}

// DefaultLimits returns the reference's bounds: schemas of 65,536 bytes,
// 4,096 JSON values, depth 32 and 4,096 expanded visits; instances of
// 1,048,576 bytes, depth 64 and 65,536 values; work 16,777,216.
func DefaultLimits() Limits {
	return Limits{
		MaxSchemaBytes:   65_536,
		MaxNodes:         4_096,
		MaxDepth:         32,
		MaxVisits:        4_096,
		MaxInstanceBytes: 1_048_576,
		MaxInstanceDepth: 64,
		MaxInstanceNodes: 65_536,
		MaxWork:          16_777_216,
	}
}

// withDefaults fills non-positive fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.MaxSchemaBytes, d.MaxSchemaBytes)
	fill(&l.MaxNodes, d.MaxNodes)
	fill(&l.MaxDepth, d.MaxDepth)
	fill(&l.MaxVisits, d.MaxVisits)
	fill(&l.MaxInstanceBytes, d.MaxInstanceBytes)
	fill(&l.MaxInstanceDepth, d.MaxInstanceDepth)
	fill(&l.MaxInstanceNodes, d.MaxInstanceNodes)
	if l.MaxWork == 0 {
		l.MaxWork = d.MaxWork
	}
	return l
}
