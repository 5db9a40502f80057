package authority

// LayerKind says where a layer comes from.
type LayerKind string

// The kinds of layer, in the order a Set evaluates them.
const (
	// KindAuthority is an immutable ceiling: a host layer or a
	// deployment's [[authority]] entry.
	KindAuthority LayerKind = "authority"
	// KindPolicy is ordinary policy (options.policy, options.mcp.policies).
	KindPolicy LayerKind = "policy"
	// KindChild is a child's narrowing.
	KindChild LayerKind = "child"
)

// Layer is one set of constraints. A nil dimension adds no constraint; a
// non-nil ToolNames list is an allowlist of capability IDs (empty permits
// nothing).
type Layer struct {
	ID   string    `json:"id"`
	Kind LayerKind `json:"kind"`
	// ToolNames, when non-nil, lists the only capability IDs this layer
	// admits (an authority layer's tool_names, a child's tool list).
	ToolNames []ID `json:"tool_names,omitempty"`
	// Dimensions holds the rule sets of this layer.
	Dimensions map[Dimension]*Rules `json:"dimensions,omitempty"`
}

func (l Layer) clone() Layer {
	c := Layer{ID: l.ID, Kind: l.Kind}
	if l.ToolNames != nil {
		c.ToolNames = append([]ID{}, l.ToolNames...)
	}
	if l.Dimensions != nil {
		c.Dimensions = make(map[Dimension]*Rules, len(l.Dimensions))
		for d, r := range l.Dimensions {
			c.Dimensions[d] = r.Clone()
		}
	}
	return c
}

func (l Layer) admitsName(id ID) bool {
	if l.ToolNames == nil {
		return true
	}
	for _, n := range l.ToolNames {
		if n == id {
			return true
		}
	}
	return false
}
