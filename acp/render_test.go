package acp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
)

// renderDeployment loads a deployment whose scripted model runs script in
// a workspace holding a.txt ("alpha\n"), with writes allowed and no shell.
func renderDeployment(t *testing.T, script string) (*pablo.Sessions, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
	doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n" +
		"[options.shell]\nenabled = false\n[options.filesystem]\nenabled = true\nwrite = true\n[options.policy.write_roots]\ndefault = \"allow\"\n"
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sessions, err := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return sessions, ws
}

// toolUpdate is the part of a tool_call or tool_call_update an editor
// renders.
type toolUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	ToolCallID    string `json:"toolCallId"`
	Status        string `json:"status"`
	Locations     []struct {
		Path string `json:"path"`
		Line *int   `json:"line"`
	} `json:"locations"`
	Content []struct {
		Type    string  `json:"type"`
		Path    string  `json:"path"`
		OldText *string `json:"oldText"`
		NewText string  `json:"newText"`
		Content *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"content"`
}

// A tool call that names a workspace file carries it as a location (the
// absolute path under the session's cwd), an fs.edit carries its change as
// a diff, an fs.write its new text, and an fs.search's settled update the
// lines it matched.
func TestToolCallsCarryLocationsAndDiffs(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("alpha\n"))
	rev := hex.EncodeToString(sum[:])
	script := `{"turns":[{"tool_calls":[{"name":"fs_edit","arguments":{"path":"a.txt","expected_revision":"` + rev + `","old_text":"alpha","new_text":"beta"}}]},` +
		`{"tool_calls":[{"name":"fs_write","arguments":{"path":"b.txt","text":"new file\n","expected_revision":null}}]},` +
		`{"tool_calls":[{"name":"fs_search","arguments":{"path":".","query":"beta"}}]},{"text":["done"]}]}`
	sessions, ws := renderDeployment(t, script)
	p := serve(t, sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	sid := p.newSession(2, ws)
	p.request(3, "session/prompt", textPrompt(sid, "edit it"))
	frames, answer := p.until(3)
	if stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
	var calls, settled []toolUpdate
	for _, f := range frames {
		if f.update()["sessionUpdate"] == "agent_message_chunk" {
			continue
		}
		var u struct {
			Update toolUpdate `json:"update"`
		}
		jsonUnmarshal(t, f.Params, &u)
		switch {
		case u.Update.SessionUpdate == "tool_call":
			calls = append(calls, u.Update)
		case u.Update.SessionUpdate == "tool_call_update" && (u.Update.Status == "completed" || u.Update.Status == "failed"):
			settled = append(settled, u.Update)
		}
	}
	if len(calls) != 3 || len(settled) != 3 {
		t.Fatalf("%d tool_call and %d settled updates, want 3 each: %v", len(calls), len(settled), frames)
	}
	for i, s := range settled {
		if s.Status != "completed" {
			t.Fatalf("call %d ended %s", i, s.Status)
		}
	}
	a, b := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt")
	edit := calls[0]
	if len(edit.Locations) != 1 || edit.Locations[0].Path != a {
		t.Errorf("fs.edit locations %+v, want %s", edit.Locations, a)
	}
	if len(edit.Content) != 1 || edit.Content[0].Type != "diff" || edit.Content[0].Path != a ||
		edit.Content[0].OldText == nil || *edit.Content[0].OldText != "alpha" || edit.Content[0].NewText != "beta" {
		t.Errorf("fs.edit content %+v, want the diff alpha → beta of %s", edit.Content, a)
	}
	write := calls[1]
	if len(write.Locations) != 1 || write.Locations[0].Path != b ||
		len(write.Content) != 1 || write.Content[0].Type != "diff" || write.Content[0].OldText != nil || write.Content[0].NewText != "new file\n" {
		t.Errorf("fs.write renders %+v", write)
	}
	search := settled[2]
	if len(search.Locations) != 1 || search.Locations[0].Path != a || search.Locations[0].Line == nil || *search.Locations[0].Line != 1 {
		t.Errorf("fs.search's result locations %+v, want %s line 1", search.Locations, a)
	}
	if got, _ := os.ReadFile(a); string(got) != "beta\n" {
		t.Fatalf("the edit left %q", got)
	}
}

// A path the model names outside the workspace renders no location: the
// tool refuses it, and the editor is never pointed at it.
func TestNoLocationOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	script := `{"turns":[{"tool_calls":[{"name":"fs_read","arguments":{"path":"../outside.txt"}}]},{"text":["done"]}]}`
	sessions, ws := renderDeployment(t, script)
	p := serve(t, sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	sid := p.newSession(2, ws)
	p.request(3, "session/prompt", textPrompt(sid, "read it"))
	frames, _ := p.until(3)
	for _, f := range frames {
		if f.update()["locations"] != nil {
			t.Fatalf("a location outside the workspace: %s", f.raw)
		}
	}
}

// The activated Skills are offered as slash commands: one
// available_commands_update after the session/new response, naming each
// with its description and input hint.
func TestSkillsAreOfferedAsCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`})
	p := serve(t, f.sessions, acp.Options{Clock: newFakeClock(), Commands: []acp.Command{{Name: "review", Description: "Reviews evidence.", Hint: "what to review"}}})
	p.initialize()
	sid := p.newSession(2, f.ws)
	next, ok := p.next()
	if !ok {
		t.Fatal("no frame after session/new")
	}
	var u struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate     string `json:"sessionUpdate"`
			AvailableCommands []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Input       struct {
					Hint string `json:"hint"`
				} `json:"input"`
			} `json:"availableCommands"`
		} `json:"update"`
	}
	jsonUnmarshal(t, next.Params, &u)
	if next.Method != "session/update" || u.SessionID != sid || u.Update.SessionUpdate != "available_commands_update" ||
		len(u.Update.AvailableCommands) != 1 || u.Update.AvailableCommands[0].Name != "review" ||
		u.Update.AvailableCommands[0].Description != "Reviews evidence." || u.Update.AvailableCommands[0].Input.Hint != "what to review" {
		t.Fatalf("after session/new: %s", next.raw)
	}
}
