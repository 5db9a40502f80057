package acp

import (
	"encoding/json"
	"strings"
	"testing"
)

// A settled shell.run carries its output (stdout, then stderr) as text
// content, an MCP call the text its server returned; text past the bound
// is cut with a note, and other tools' results carry no content.
func TestOutputBecomesTextContent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, tool, result, want string
	}{
		{"shell", "shell.run", `{"shell":{"stdout":"built\n","stderr":"warning: x","exit_code":0},"status":"completed"}`, "built\nwarning: x"},
		{"shell without a newline", "shell.run", `{"shell":{"stdout":"a","stderr":"b"},"status":"recoverable_error"}`, "a\nb"},
		{"mcp", "mcp/everything/echo", `{"mcp":{"server":"everything","tool":"echo","content":"Echo: hi"},"status":"completed"}`, "Echo: hi"},
		{"mcp blocks", "mcp/everything/echo", `{"mcp":{"server":"everything","tool":"echo","content":["Echo: hi"]},"status":"completed"}`, "Echo: hi"},
		{"native read", "fs.read", `{"filesystem":{"path":"a.txt","text":"alpha"},"status":"completed"}`, ""},
		{"empty output", "shell.run", `{"shell":{"stdout":"","stderr":""},"status":"completed"}`, ""},
	} {
		_, content := finishRender("/w", c.tool, json.RawMessage(c.result))
		got := ""
		if len(content) == 1 && content[0].Content != nil && content[0].Content.Content.Text != nil {
			got = content[0].Content.Content.Text.Text
		} else if len(content) != 0 {
			t.Errorf("%s: content %+v", c.name, content)
		}
		if got != c.want {
			t.Errorf("%s: content %q, want %q", c.name, got, c.want)
		}
	}
	big, _ := json.Marshal(map[string]any{"shell": map[string]any{"stdout": strings.Repeat("x", maxContentText+10)}})
	_, content := finishRender("/w", "shell.run", big)
	if text := content[0].Content.Content.Text.Text; len(text) > maxContentText+64 || !strings.HasSuffix(text, "[… 10 more bytes]") {
		t.Errorf("cut output ends %q (%d bytes)", text[len(text)-40:], len(text))
	}
}

// Only a local, workspace-relative path becomes a location: an absolute
// path or one that climbs out is never rendered.
func TestLocationsStayInTheWorkspace(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]string{"a.txt": "/w/a.txt", "d/b.go": "/w/d/b.go", ".": "/w", "../x": "", "/etc/passwd": "", "d/../../x": "", "": ""} {
		got, ok := located("/w", rel)
		if ok != (want != "") || got != want {
			t.Errorf("located(%q) = %q, %v; want %q", rel, got, ok, want)
		}
	}
}
