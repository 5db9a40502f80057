package authority

import "testing"

// TestApprovalGrantCoversOnlyTheSameCall: an "allow for this task" grant
// covers a later call only of the same capability, with the same effect,
// over the same resources, and, for a call that names only its launcher,
// with the same arguments: an answer for one command or effect never
// answers for another.
func TestApprovalGrantCoversOnlyTheSameCall(t *testing.T) {
	t.Parallel()
	sh := []Resource{{Kind: ResourceExecutable, Value: "/bin/sh"}}
	doc := []Resource{{Kind: ResourceWrite, Value: "docs/a.md"}}
	shell := NewApprovalGrant(ShellRun, EffectExecute, sh, "sha256:ls")
	write := NewApprovalGrant(FSWrite, EffectWrite, doc, "sha256:one")
	for _, tc := range []struct {
		name  string
		grant ApprovalGrant
		call  ApprovalGrant
		want  bool
	}{
		{"the same command", shell, NewApprovalGrant(ShellRun, EffectExecute, sh, "sha256:ls"), true},
		{"another command", shell, NewApprovalGrant(ShellRun, EffectExecute, sh, "sha256:rm"), false},
		{"the same command reaching the network", shell, NewApprovalGrant(ShellRun, EffectNetwork, sh, "sha256:ls"), false},
		{"another capability", shell, NewApprovalGrant("mcp/records/run", EffectExecute, sh, "sha256:ls"), false},
		{"another launcher", shell, NewApprovalGrant(ShellRun, EffectExecute, []Resource{{Kind: ResourceExecutable, Value: "/bin/bash"}}, "sha256:ls"), false},
		// A call that names what it acts on is bound to it, not to its
		// arguments: other content for the same file is covered.
		{"the same file, other content", write, NewApprovalGrant(FSWrite, EffectWrite, doc, "sha256:two"), true},
		{"another file", write, NewApprovalGrant(FSWrite, EffectWrite, []Resource{{Kind: ResourceWrite, Value: "docs/b.md"}}, "sha256:one"), false},
		{"one more file", write, NewApprovalGrant(FSWrite, EffectWrite, append([]Resource{{Kind: ResourceWrite, Value: "docs/b.md"}}, doc...), "sha256:one"), false},
		{"the same file, another effect", write, NewApprovalGrant(FSWrite, EffectExecute, doc, "sha256:one"), false},
	} {
		if got := tc.grant.Covers(tc.call); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestEffectOfACallFollowsItsSandbox: what a call does to the world, the
// part of an approval question a human weighs first, follows the
// capability and, for a process, its sandbox: a shell command or stdio
// MCP server whose sandbox is off or allows the network reaches the
// network; one whose sandbox denies it only executes; a Streamable HTTP
// server's tool (no sandbox) is a network request.
func TestEffectOfACallFollowsItsSandbox(t *testing.T) {
	t.Parallel()
	const (
		deny  = "required filesystem=read-only network=deny"
		allow = "required filesystem=read-only network=allow"
	)
	for _, tc := range []struct {
		id      ID
		sandbox string
		want    CallEffect
	}{
		{FSRead, "", EffectRead}, {FSList, "", EffectRead}, {FSSearch, "", EffectRead}, {SkillRead, "", EffectRead},
		{FSWrite, "", EffectWrite}, {FSEdit, "", EffectWrite},
		{Subagent, "", EffectDelegate},
		{ShellRun, deny, EffectExecute}, {ShellRun, allow, EffectNetwork}, {ShellRun, "off", EffectNetwork},
		{"mcp/records/lookup", deny, EffectExecute}, {"mcp/records/lookup", allow, EffectNetwork},
		{"mcp/records/lookup", "off", EffectNetwork}, {"mcp/records/lookup", "", EffectNetwork},
		{"notes.read", "", EffectExecute},
	} {
		if got := EffectOf(tc.id, Decision{Allowed: true, Sandbox: tc.sandbox}); got != tc.want {
			t.Errorf("EffectOf(%s, sandbox %q) = %s, want %s", tc.id, tc.sandbox, got, tc.want)
		}
	}
}
