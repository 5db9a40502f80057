package children

import (
	"slices"
	"strings"

	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
)

// Capabilities are what an agent may use, by name: qualified tool IDs
// (fs.read, mcp/{server}/{tool}), qualified Skills (ROOT/NAME), MCP server
// names and the model route's entries, in order. In a request a nil list
// inherits the parent's; in a parent's or an effective scope a nil list
// is empty.
type Capabilities struct {
	Tools      []string `json:"tools"`
	Skills     []string `json:"skills"`
	MCPServers []string `json:"mcp_servers"`
	ModelRoute []string `json:"model_route"`
	// Memory bounds the memory tools (seed 002): nil inherits the
	// parent's; see MemoryScope and Narrow.
	Memory *MemoryScope `json:"memory,omitempty"`
}

// Ceilings are an agent's ceilings, the subagent tool's ceilings object. A
// ceiling that is not set inherits the parent's.
type Ceilings struct {
	MaxModelCalls     ledger.Limit `json:"max_model_calls"`
	MaxToolCalls      ledger.Limit `json:"max_tool_calls"`
	MaxDurationMillis ledger.Limit `json:"max_duration_ms"`
	MaxContextBytes   ledger.Limit `json:"max_context_bytes"`
	MaxOutputBytes    ledger.Limit `json:"max_output_bytes"`
	MaxTotalTokens    ledger.Limit `json:"max_total_tokens"`
	MaxCostMicroUSD   ledger.Limit `json:"max_cost_microusd"`
}

// fields lists every ceiling once, with its argument name.
func (c *Ceilings) fields() [7]struct {
	name  string
	limit *ledger.Limit
} {
	return [...]struct {
		name  string
		limit *ledger.Limit
	}{
		{"max_model_calls", &c.MaxModelCalls},
		{"max_tool_calls", &c.MaxToolCalls},
		{"max_duration_ms", &c.MaxDurationMillis},
		{"max_context_bytes", &c.MaxContextBytes},
		{"max_output_bytes", &c.MaxOutputBytes},
		{"max_total_tokens", &c.MaxTotalTokens},
		{"max_cost_microusd", &c.MaxCostMicroUSD},
	}
}

// Limits returns the ceilings as the ledger's Limits of an agent (the
// fields Ceilings does not have are not set).
func (c Ceilings) Limits() ledger.Limits {
	return ledger.Limits{
		ModelCalls:     c.MaxModelCalls,
		ToolCalls:      c.MaxToolCalls,
		DurationMillis: c.MaxDurationMillis,
		ContextBytes:   c.MaxContextBytes,
		OutputBytes:    c.MaxOutputBytes,
		TotalTokens:    c.MaxTotalTokens,
		CostMicroUSD:   c.MaxCostMicroUSD,
	}
}

// Scope is an agent's capabilities and ceilings: a parent's, a request's
// or a child's effective one.
type Scope struct {
	Capabilities Capabilities
	Ceilings     Ceilings
}

// Narrow returns the effective scope of a child that asks for request
// under parent: child ⊆ parent on every dimension.
//
//   - Tools, Skills, MCP servers: a nil request list inherits the parent's
//     list; a non-nil one keeps exactly what it names, each of which the
//     parent must have, once. An inherited MCP tool whose server the
//     child does not have is left out; a requested one fails. The
//     subagent tool is never a child's (depth one): inherited, it is left
//     out; requested, it fails.
//   - The server rule: a request that itself names mcp_servers and a tool
//     list naming no MCP tool keeps, beside the tools it names, every
//     tool the parent has of those servers. Inherited servers add nothing:
//     a tool list with mcp_servers omitted keeps exactly what it names, so
//     {"tools": []} is a child with no tool at all.
//   - Model route: nil inherits; otherwise a non-empty ordered exact
//     subsequence of the parent's entries (model_route_order).
//   - Memory: nil inherits; otherwise each list it names (kinds, paths)
//     keeps exactly that, each entry covered by the parent's list (a kind
//     it has, a path inside one of its paths); a parent without memory
//     tools passes none on. The child's memory tools are cut down to it.
//   - Ceilings: the smaller of the request's and the parent's; a ceiling
//     the request does not set is the parent's.
//
// A name the parent lacks fails with an [*Error] of code
// capability_not_inherited naming the dimension and the entry; nothing is
// granted on failure.
func Narrow(parent, request Scope) (Scope, error) {
	var out Scope
	var err error
	p, r := parent.Capabilities, request.Capabilities
	if out.Capabilities.MCPServers, err = subset("capabilities.mcp_servers", p.MCPServers, r.MCPServers); err != nil {
		return Scope{}, err
	}
	if out.Capabilities.Skills, err = subset("capabilities.skills", p.Skills, r.Skills); err != nil {
		return Scope{}, err
	}
	if slices.Contains(r.Tools, ToolID) {
		return Scope{}, errorf(CodeNotInherited, "capabilities.tools", "a child cannot have the %s tool: children are depth one and cannot spawn", ToolID)
	}
	if out.Capabilities.Tools, err = subset("capabilities.tools", p.Tools, r.Tools); err != nil {
		return Scope{}, err
	}
	// Depth one: the subagent tool never passes to a child.
	out.Capabilities.Tools = slices.DeleteFunc(out.Capabilities.Tools, func(t string) bool { return t == ToolID })
	if r.Tools != nil && r.MCPServers != nil && !slices.ContainsFunc(r.Tools, isMCPTool) {
		// The server rule, only for servers the request names.
		for _, t := range p.Tools {
			if srv, ok := mcpServer(t); ok && slices.Contains(out.Capabilities.MCPServers, srv) && !slices.Contains(out.Capabilities.Tools, t) {
				out.Capabilities.Tools = append(out.Capabilities.Tools, t)
			}
		}
	}
	// An MCP tool goes with its server: one the request names fails
	// without it, an inherited one is left out.
	for _, t := range out.Capabilities.Tools {
		if srv, ok := mcpServer(t); ok && r.Tools != nil && !slices.Contains(out.Capabilities.MCPServers, srv) {
			return Scope{}, errorf(CodeNotInherited, "capabilities.tools",
				"tool %q needs MCP server %q, which the child does not have: add the server or drop the tool",
				textx.Shorten(t, 80), textx.Shorten(srv, 40))
		}
	}
	out.Capabilities.Tools = slices.DeleteFunc(out.Capabilities.Tools, func(t string) bool {
		srv, ok := mcpServer(t)
		return ok && !slices.Contains(out.Capabilities.MCPServers, srv)
	})
	if out.Capabilities.ModelRoute, err = subsequence(p.ModelRoute, r.ModelRoute); err != nil {
		return Scope{}, err
	}
	if out.Capabilities.Memory, err = narrowMemory(p.Memory, r.Memory); err != nil {
		return Scope{}, err
	}
	out.Ceilings = parent.Ceilings
	req := request.Ceilings
	mine, theirs := out.Ceilings.fields(), req.fields()
	for i := range mine {
		if theirs[i].limit.IsSet() {
			*mine[i].limit = mine[i].limit.Min(*theirs[i].limit)
		}
	}
	return out, nil
}

// isMCPTool reports whether tool is a qualified MCP tool ID.
func isMCPTool(tool string) bool {
	_, ok := mcpServer(tool)
	return ok
}

// mcpServer returns the server of a qualified MCP tool ID mcp/{server}/{tool}.
func mcpServer(tool string) (string, bool) {
	rest, ok := strings.CutPrefix(tool, "mcp/")
	if !ok {
		return "", false
	}
	srv, _, ok := strings.Cut(rest, "/")
	return srv, ok
}

// subset returns the request's list when every entry is the parent's and
// none repeats, the parent's when the request's is nil.
func subset(field string, parent, request []string) ([]string, error) {
	if request == nil {
		return append([]string{}, parent...), nil
	}
	out := make([]string, 0, len(request))
	for _, name := range request {
		if !slices.Contains(parent, name) {
			return nil, errorf(CodeNotInherited, field, "%q is not the parent's: a child can only keep what its parent has", textx.Shorten(name, 80))
		}
		if slices.Contains(out, name) {
			return nil, errorf(CodeOutOfRange, field, "%q is named twice", textx.Shorten(name, 80))
		}
		out = append(out, name)
	}
	return out, nil
}

// subsequence returns the request's route when it is a non-empty ordered
// exact subsequence of the parent's, the parent's when it is nil.
func subsequence(parent, request []string) ([]string, error) {
	const field = "capabilities.model_route"
	if request == nil {
		return append([]string{}, parent...), nil
	}
	if len(request) == 0 {
		return nil, errorf(CodeOutOfRange, field, "an empty route leaves the child no model: pass null to inherit the parent's route")
	}
	i := 0
	for _, name := range request {
		if !slices.Contains(parent, name) {
			return nil, errorf(CodeNotInherited, field, "route entry %q is not the parent's", textx.Shorten(name, 80))
		}
		for i < len(parent) && parent[i] != name {
			i++
		}
		if i == len(parent) {
			return nil, errorf(CodeModelRouteOrder, field, "route entry %q is out of the parent's order (or repeated): keep the parent's entries in their order", textx.Shorten(name, 80))
		}
		i++
	}
	return append([]string{}, request...), nil
}
