package authority

import (
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/internal/textx"
)

// ID is a qualified capability identity: a native tool ("fs.read"), an MCP
// tool ("mcp/records/lookup"), or a Skill ("team/evidence-review"). Policy,
// ledger and events all speak in IDs.
type ID string

// The native tool IDs.
const (
	FSRead    ID = "fs.read"
	FSList    ID = "fs.list"
	FSSearch  ID = "fs.search"
	FSWrite   ID = "fs.write"
	FSEdit    ID = "fs.edit"
	ShellRun  ID = "shell.run"
	SkillRead ID = "skill.read"
	Subagent  ID = "subagent"
)

// NativeTools lists every native tool ID in catalog order.
func NativeTools() []ID {
	return []ID{FSRead, FSList, FSSearch, FSWrite, FSEdit, ShellRun, SkillRead, Subagent}
}

// Kind classifies an ID.
type Kind int

// The kinds of capability.
const (
	KindInvalid Kind = iota
	KindNative
	KindMCPTool
	KindSkill
	// KindHost is a host's own tool: a dotted lowercase name such as
	// "notes.read" that is not a native tool.
	KindHost
)

func (k Kind) String() string {
	switch k {
	case KindNative:
		return "native"
	case KindMCPTool:
		return "mcp_tool"
	case KindSkill:
		return "skill"
	case KindHost:
		return "host_tool"
	}
	return "invalid"
}

// Kind reports what kind of capability id names, or KindInvalid when it is
// malformed.
func (id ID) Kind() Kind {
	s := string(id)
	if s == "" || len(s) > 4096 {
		return KindInvalid
	}
	if server, tool, ok := id.MCP(); ok {
		if ValidMCPServerName(server) && ValidMCPToolName(tool) {
			return KindMCPTool
		}
		return KindInvalid
	}
	if strings.HasPrefix(s, "mcp/") {
		return KindInvalid
	}
	for _, n := range NativeTools() {
		if id == n {
			return KindNative
		}
	}
	if root, name, ok := strings.Cut(s, "/"); ok && validSkillRoot(root) && validSkillName(name) {
		return KindSkill
	}
	if validHostName(s) {
		return KindHost
	}
	return KindInvalid
}

// validHostName accepts dotted lowercase names with at least two segments,
// each [a-z][a-z0-9_]*, at most 128 bytes: "notes.read", "crm.lookup_account".
func validHostName(s string) bool {
	if len(s) > 128 || !strings.Contains(s, ".") {
		return false
	}
	segStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if segStart {
				return false
			}
			segStart = true
		case segStart:
			if !(c >= 'a' && c <= 'z') {
				return false
			}
			segStart = false
		case !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'):
			return false
		}
	}
	return !segStart
}

// MCP splits an MCP tool ID into its server and tool names.
func (id ID) MCP() (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(string(id), "mcp/")
	if !found {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "/")
	if !ok || strings.Contains(tool, "/") {
		return "", "", false
	}
	return server, tool, true
}

// MCPTool returns the qualified ID of tool on server.
func MCPTool(server, tool string) ID { return ID("mcp/" + server + "/" + tool) }

// ValidMCPServerName reports whether s is a valid MCP server name:
// 1..32 bytes of [A-Za-z0-9_.-].
func ValidMCPServerName(s string) bool { return ids.ValidName(s, 32) }

// ValidMCPToolName reports whether s is a valid raw MCP tool name: 1..128
// bytes of [A-Za-z0-9_.-], no separators.
func ValidMCPToolName(s string) bool { return ids.ValidName(s, 128) }

func validSkillRoot(s string) bool { return ids.ValidName(s, 32) }

func validSkillName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ValidRuleID reports whether s can name a configured rule or authority
// layer: 1..64 bytes of [A-Za-z0-9_.-], not starting with the reserved
// "builtin." prefix.
func ValidRuleID(s string) bool {
	return ids.ValidName(s, 64) && !strings.HasPrefix(s, "builtin.")
}

// WireName maps a native ID to the name a model provider sees: dots become
// underscores ("fs.read" → "fs_read"). MCP tools use an alias instead (see
// package mcp). The mapping is a bijection over native IDs.
func WireName(id ID) string { return strings.ReplaceAll(string(id), ".", "_") }

// NativeFromWire inverts WireName for native tools.
func NativeFromWire(name string) (ID, bool) {
	for _, n := range NativeTools() {
		if WireName(n) == name {
			return n, true
		}
	}
	return "", false
}

func (id ID) String() string { return string(id) }

// Validate returns an error when id is malformed.
func (id ID) Validate() error {
	if id.Kind() == KindInvalid {
		return fmt.Errorf("authority: %q is not a capability ID (want a native tool such as fs.read, mcp/SERVER/TOOL or ROOT/SKILL)", textx.Shorten(string(id), 80))
	}
	return nil
}
