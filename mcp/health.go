package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/pabloagent/pablo/authority"
)

// State is a server's health.
type State string

// The health states.
const (
	// Unknown: not probed yet.
	Unknown State = "Unknown"
	// Ready: reachable and every discovered tool admitted.
	Ready State = "Ready"
	// Degraded: reachable, but some tools are unavailable (schema outside
	// the subset, a changed definition, a bound).
	Degraded State = "Degraded"
	// Denied: policy blocked the server, or every one of its tools.
	Denied State = "Denied"
	// Failed: start, initialize or discovery failed.
	Failed State = "Failed"
	// Disabled: the session ended (closed, or the server ended it).
	Disabled State = "Disabled"
)

// Health is what a catalog knows about one server.
type Health struct {
	Server    string    `json:"server"`
	Transport Transport `json:"transport"`
	State     State     `json:"state"`
	Required  bool      `json:"required"`
	// Code and Reason explain a state other than Ready.
	Code   Code   `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Decision is the server-level admission decision.
	Decision *authority.Decision `json:"decision,omitempty"`
	// Version is the negotiated protocol version.
	Version string `json:"protocol_version,omitempty"`
	// CheckedAt is when the state was last set.
	CheckedAt time.Time `json:"checked_at"`
	// Tools lists every discovered tool, admitted or not.
	Tools []ToolStatus `json:"tools,omitempty"`
	// Credentials lists the credential references the server uses, never
	// their values.
	Credentials []CredentialRef `json:"credentials,omitempty"`
}

// ToolStatus is one discovered tool.
type ToolStatus struct {
	Name     string       `json:"name"`
	ID       authority.ID `json:"id"`
	Alias    string       `json:"alias"`
	Admitted bool         `json:"admitted"`
	Code     Code         `json:"code,omitempty"`
	Reason   string       `json:"reason,omitempty"`
	RuleID   string       `json:"rule_id,omitempty"`
	Layer    string       `json:"layer,omitempty"`
	// Digest is the definition digest a deployment pins.
	Digest string `json:"digest,omitempty"`
}

// CredentialRef is a credential reference as configured: where it goes and
// which credential fills it.
type CredentialRef struct {
	// Kind is "env", "header" or "oauth".
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Credential  string `json:"credential"`
	Destination string `json:"destination"`
}

// Alias returns the name a model provider sees for an MCP tool: "mcp_" and
// the first 24 bytes of SHA-256 of the qualified ID in lowercase hex.
func Alias(id authority.ID) string {
	sum := sha256.Sum256([]byte(id))
	return "mcp_" + hex.EncodeToString(sum[:24])
}
