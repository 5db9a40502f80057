package main

import (
	"strings"
	"testing"
	"unicode"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/termtext"
)

// FuzzTerminalAnswer: whatever a terminal sends, the prompt's parser
// answers only with one of the four answers, and only for a line that is
// exactly one of their spellings; and nothing printable shows keeps a
// rune a terminal could act on.
func FuzzTerminalAnswer(f *testing.F) {
	for _, s := range []string{"o\n", "t", " r \n", "x", "allow for this task\n", "O", "yes", "", "\x1b[2J", "\u009b2J", "o\x00", "\xff\xfe", "reject\r\n"} {
		f.Add(s)
	}
	spellings := map[string]approval.Answer{"o": approval.AllowOnce, "once": approval.AllowOnce, "allow once": approval.AllowOnce,
		"t": approval.AllowForTask, "task": approval.AllowForTask, "allow for task": approval.AllowForTask, "allow for this task": approval.AllowForTask,
		"r": approval.Reject, "reject": approval.Reject,
		"x": approval.RejectForTask, "reject for task": approval.RejectForTask, "reject for this task": approval.RejectForTask}
	f.Fuzz(func(t *testing.T, line string) {
		answer, ok := parseAnswer(line)
		want, spelled := spellings[strings.TrimSpace(line)]
		if ok != spelled || answer != want {
			t.Fatalf("parseAnswer(%q) = %q, %v; want %q, %v", line, answer, ok, want, spelled)
		}
		for _, r := range termtext.Printable(line) {
			if r != ' ' && !unicode.IsPrint(r) {
				t.Fatalf("termtext.Printable(%q) keeps %U", line, r)
			}
		}
	})
}

// TestPromptShowsTheExactCallEscaped: the prompt names every part of the
// request, and a terminal control in any of them is shown escaped.
func TestPromptShowsTheExactCallEscaped(t *testing.T) {
	req := approval.Request{ID: "apr_1", AgentID: "agent\x1b]0;owned\x07", CallID: "c1", Tool: "shell.run", Effect: "execute",
		Arguments: []byte("{\"command\":\"rm \u009b2J\"}"), Resources: []authority.Resource{{Kind: "executable", Value: "/bin/sh\u202e"}}}
	p := approvalPrompt(req)
	for _, w := range []string{"request    apr_1", `agent      agent\u001b]0;owned\u0007`, "call       c1", "capability shell.run", "effect     execute",
		`arguments  {"command":"rm \u009b2J"}`, `resource   executable /bin/sh\u202e`, answerChoices} {
		if !strings.Contains(p, w) {
			t.Errorf("the prompt lacks %q:\n%s", w, p)
		}
	}
	for _, r := range p {
		if r != '\n' && r != ' ' && !unicode.IsPrint(r) {
			t.Errorf("the prompt holds %U raw", r)
		}
	}
}

// TestPromptShowsWhatASpawnDelegatesEscaped: a subagent call's prompt
// shows what it delegates (the action, the child's capabilities, its
// handoffs, the digest and size of its input), escaped, and a remote's
// name for a spawn_remote; never the input itself.
func TestPromptShowsWhatASpawnDelegatesEscaped(t *testing.T) {
	req := approval.Request{ID: "apr_1", AgentID: "root", CallID: "s1", Tool: "subagent", Effect: "delegate",
		Delegation: &approval.Delegation{Action: children.ActionSpawn,
			Capabilities: children.Capabilities{Tools: []string{"notes.read", "fs\x1b[2J.write"}, Skills: []string{"repo/review"}},
			Handoffs:     []children.Handoff{{SourceAgentID: "agent_a", ResultID: "res_1", Kind: children.HandoffArtifact}},
			InputDigest:  "sha256:" + strings.Repeat("ab", 32), InputBytes: 42}}
	p := approvalPrompt(req)
	for _, w := range []string{"delegates  spawn", `tools      notes.read, fs\u001b[2J.write`, "skills     repo/review", "servers    \n", "route      \n",
		"handoff    artifact res_1 of agent_a", "input      sha256:" + strings.Repeat("ab", 32) + " (42 bytes)"} {
		if !strings.Contains(p, w) {
			t.Errorf("the prompt lacks %q:\n%s", w, p)
		}
	}
	if strings.Contains(p, "remote") {
		t.Errorf("a spawn's prompt names a remote:\n%s", p)
	}
	for _, r := range p {
		if r != '\n' && r != ' ' && !unicode.IsPrint(r) {
			t.Errorf("the prompt holds %U raw", r)
		}
	}
	req.Delegation = &approval.Delegation{Action: children.ActionSpawnRemote, Remote: "billing\u009b", InputDigest: "sha256:" + strings.Repeat("cd", 32), InputBytes: 7}
	p = approvalPrompt(req)
	for _, w := range []string{"delegates  spawn_remote", `remote     billing\u009b`, "input      sha256:" + strings.Repeat("cd", 32) + " (7 bytes)"} {
		if !strings.Contains(p, w) {
			t.Errorf("the prompt lacks %q:\n%s", w, p)
		}
	}
	if strings.Contains(p, "tools") {
		t.Errorf("a spawn_remote's prompt names capabilities:\n%s", p)
	}
}
