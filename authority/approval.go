package authority

import (
	"slices"
	"strings"
)

// CallEffect is what a call does to the world, the part of an approval request
// a human weighs first: an answer given for one effect never covers
// another.
type CallEffect string

// The effects of a call.
const (
	// EffectRead only observes: fs.read, fs.list, fs.search, skill.read.
	EffectRead CallEffect = "read"
	// EffectWrite changes the workspace: fs.write, fs.edit.
	EffectWrite CallEffect = "write"
	// EffectExecute runs code that cannot reach the network: a sandboxed
	// shell.run or stdio MCP server's tool whose sandbox denies it, a
	// host tool.
	EffectExecute CallEffect = "execute"
	// EffectNetwork runs code that can reach the network, or is itself a
	// network request: a shell.run or stdio MCP server's tool whose
	// sandbox allows the network or is off, a Streamable HTTP server's
	// tool.
	EffectNetwork CallEffect = "network"
	// EffectDelegate hands work to another agent: subagent.
	EffectDelegate CallEffect = "delegate"
)

// EffectOf is the effect of a call of capability id under decision d (its
// sandbox says whether a process can reach the network; an MCP tool with
// no sandbox is a Streamable HTTP server's, a request over the network).
// docs/approvals.md writes the whole matrix.
func EffectOf(id ID, d Decision) CallEffect {
	switch id {
	case FSRead, FSList, FSSearch, SkillRead:
		return EffectRead
	case FSWrite, FSEdit:
		return EffectWrite
	case Subagent:
		return EffectDelegate
	case ShellRun:
		if reachesNetwork(d.Sandbox) {
			return EffectNetwork
		}
		return EffectExecute
	}
	if id.Kind() == KindMCPTool && (d.Sandbox == "" || reachesNetwork(d.Sandbox)) {
		return EffectNetwork
	}
	return EffectExecute
}

// reachesNetwork reports whether a process in sandbox (a Decision's
// Sandbox) can reach the network: with the sandbox off, or one that
// allows it.
func reachesNetwork(sandbox string) bool {
	return sandbox == "off" || strings.Contains(sandbox, "network=allow") || strings.Contains(sandbox, "network=unrestricted-with-approval") ||
		strings.Contains(sandbox, "network=repository-host-only")
}

// ApprovalGrant is what an "allow for this task" answer adds to the rest of
// one task: the calls of one capability with one effect over exactly the
// same resources, or, for a call that names no resource but a launcher,
// with exactly the same arguments. It is a narrowing rule of the task's
// own: it only lets a later call skip the question; it never allows a call
// the layers deny.
type ApprovalGrant struct {
	Capability ID
	CallEffect CallEffect
	// Resources, sorted, are the resources every covered call names.
	Resources []Resource
	// ArgumentsDigest, set when Resources name nothing the call acts on
	// (none, or only a launcher), is the one argument set the grant
	// covers.
	ArgumentsDigest string
}

// NewApprovalGrant is the grant an "allow for this task" answer to a call
// of capability id with effect e over res records. A call whose resources
// name only launchers (ResourceExecutable: every shell.run names /bin/sh)
// is bound to its arguments digest too: the launcher is what starts, not
// what the call does, so a grant for one command never covers another.
func NewApprovalGrant(id ID, e CallEffect, res []Resource, digest string) ApprovalGrant {
	g := ApprovalGrant{Capability: id, CallEffect: e, Resources: slices.Clone(res)}
	slices.SortFunc(g.Resources, func(a, b Resource) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	g.Resources = slices.Compact(g.Resources)
	if !slices.ContainsFunc(g.Resources, func(r Resource) bool { return r.Kind != ResourceExecutable }) {
		g.ArgumentsDigest = digest
	}
	return g
}

// Covers reports whether the grant covers the call h describes: the same
// capability, effect and resources (or arguments).
func (g ApprovalGrant) Covers(h ApprovalGrant) bool {
	return g.Capability == h.Capability && g.CallEffect == h.CallEffect &&
		slices.Equal(g.Resources, h.Resources) && g.ArgumentsDigest == h.ArgumentsDigest
}
