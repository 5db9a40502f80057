package engine

import "github.com/pabloagent/pablo/authority"

// wireName is the name a model sees for a capability: dots become
// underscores for native and host tools; MCP tools get "mcp_" and the first
// 24 bytes of the SHA-256 of their qualified ID in hex.
func wireName(id authority.ID) string {
	if id.Kind() == authority.KindMCPTool {
		sum := sha256Tag([]byte(id))
		return "mcp_" + sum[len("sha256:"):len("sha256:")+48]
	}
	return authority.WireName(id)
}
