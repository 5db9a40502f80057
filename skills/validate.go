package skills

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/internal/schema"
)

// Metadata keys this package gives a meaning to. Both are optional and
// descriptive: like allowed-tools, they state what a Skill needs, and never
// grant it.
const (
	// MetadataMCPServers names the MCP servers a Skill needs, space-separated
	// (for example `mcp-servers: records evidence`).
	MetadataMCPServers = "mcp-servers"
	// MetadataOutputSchema holds the Skill's output contract: an inline JSON
	// Schema object (for example `output-schema: '{"type":"object"}'`).
	MetadataOutputSchema = "output-schema"
)

// Requirements are what a Skill declares it needs. Declaring grants nothing:
// a host compares them with what the task admits (Validate) and shows the
// gaps.
type Requirements struct {
	// Tools are the allowed-tools entries, as capability IDs (fs.read,
	// shell.run, mcp/{server}/{tool}, ...), sorted and unique.
	Tools []string `json:"tools,omitempty"`
	// MCPServers are the servers named by MetadataMCPServers and by
	// mcp/{server}/{tool} tool entries, sorted and unique.
	MCPServers []string `json:"mcp_servers,omitempty"`
	// OutputSchema is the MetadataOutputSchema text, if declared.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Requirements returns the Skill's declared requirements.
func (s Skill) Requirements() Requirements {
	var r Requirements
	for _, t := range s.AllowedTools {
		r.Tools = append(r.Tools, t)
		if server, _, ok := mcpServerOf(t); ok {
			r.MCPServers = append(r.MCPServers, server)
		}
	}
	r.MCPServers = append(r.MCPServers, strings.Fields(s.Metadata[MetadataMCPServers])...)
	slices.Sort(r.Tools)
	r.Tools = slices.Compact(r.Tools)
	slices.Sort(r.MCPServers)
	r.MCPServers = slices.Compact(r.MCPServers)
	if v, ok := s.Metadata[MetadataOutputSchema]; ok {
		r.OutputSchema = json.RawMessage(v)
	}
	return r
}

// mcpServerOf splits an mcp/{server}/{tool} capability ID.
func mcpServerOf(id string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(id, "mcp/")
	if !found {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "/")
	return server, tool, ok && server != "" && tool != ""
}

// Validate checks a Skill's declared requirements against a task (seed
// "Skill validation"): every required tool must be admitted, every
// required MCP server must be configured and admitted, and a declared output
// contract must compile in the bounded JSON Schema subset that children's
// output schemas and the task's output check use. admitted answers for a capability
// ID; mcpServers for a server name. A nil function admits nothing, as an
// empty registry grants nothing. The findings carry the Skill's root and
// name; none of them changes what the task may do.
func Validate(s Skill, admitted func(capabilityID string) bool, mcpServers func(name string) bool) []Finding {
	var out []Finding
	add := func(code Code, reason string) {
		out = append(out, Finding{Root: s.Root, Dir: s.Name, Code: code, Reason: reason})
	}
	req := s.Requirements()
	for _, t := range req.Tools {
		if admitted == nil || !admitted(t) {
			add(CodeToolNotAdmitted, fmt.Sprintf("allowed-tools names %s, which this task does not admit; admit it in policy or expect the Skill to work without it (Skills never add tools)", strconv.Quote(t)))
		}
	}
	for _, m := range req.MCPServers {
		if mcpServers == nil || !mcpServers(m) {
			add(CodeMCPServerMissing, fmt.Sprintf("the Skill needs MCP server %s, which is not configured and admitted for this task", strconv.Quote(m)))
		}
	}
	if req.OutputSchema != nil {
		if reason := outputContractProblem(req.OutputSchema); reason != "" {
			add(CodeInvalidOutputContract, reason)
		}
	}
	return out
}

// outputContractProblem returns why text is not a usable output contract.
// A contract is compiled by internal/schema, the one bounded dialect every
// schema a user writes goes through (a child's output_schema, the task's
// output schema, tool input schemas), with the same limits a child's
// output_schema gets, so a Skill's contract is accepted exactly where a
// child's would be.
func outputContractProblem(text []byte) string {
	if _, err := schema.Compile(text, schema.DefaultLimits()); err != nil {
		return "metadata " + MetadataOutputSchema + " is not a JSON Schema of the supported subset: " + strings.TrimPrefix(err.Error(), "schema: ")
	}
	return ""
}
