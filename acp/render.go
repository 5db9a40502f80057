package acp

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo/internal/textx"
)

// What editors render of a tool call besides its raw input and output:
// the files it touches (locations, followed by the editor) and its
// content (a diff for fs.write and fs.edit, the output of shell.run, the
// text an MCP tool returned). Both come from the call's arguments and
// result as the events carry them, which are masked already: nothing here
// reads a file or widens what the client sees.

// The bounds of what a tool call renders: the content text of one call
// and the locations of one update. Past maxContentText a diff is left out
// (half a diff misleads) and output text is cut with a note.
const (
	maxContentText = 256 << 10
	maxLocations   = 64
)

// located resolves a workspace-relative path the model named against the
// session's working directory, as the client sent it, so the editor finds
// the file in its own namespace. An absolute or escaping path is not
// rendered (the tool refuses it anyway).
func located(cwd, rel string) (string, bool) {
	if cwd == "" || rel == "" || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.Join(cwd, rel), true
}

// startRender is what a tool_call carries of a call that starts: the path
// its arguments name and, for a write or an edit, the change as a diff.
func startRender(cwd, tool string, args json.RawMessage) ([]sdk.ToolCallLocation, []sdk.ToolCallContent) {
	switch tool {
	case "fs.read", "fs.list", "fs.search", "fs.write", "fs.edit":
	default:
		return nil, nil
	}
	var a struct {
		Path    string  `json:"path"`
		Text    *string `json:"text"`
		OldText *string `json:"old_text"`
		NewText *string `json:"new_text"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil, nil
	}
	path, ok := located(cwd, a.Path)
	if !ok {
		return nil, nil
	}
	locs := []sdk.ToolCallLocation{{Path: path}}
	var content []sdk.ToolCallContent
	switch {
	case tool == "fs.write" && a.Text != nil && len(*a.Text) <= maxContentText:
		// The whole new text; what it replaces is not known here (the
		// projector never reads the file), so the diff has no old text.
		content = append(content, sdk.ToolDiffContent(path, *a.Text))
	case tool == "fs.edit" && a.OldText != nil && a.NewText != nil && len(*a.OldText)+len(*a.NewText) <= maxContentText:
		// The replaced span and its replacement: the edit as the tool
		// applies it.
		content = append(content, sdk.ToolDiffContent(path, *a.NewText, *a.OldText))
	}
	return locs, content
}

// finishRender is what the last tool_call_update carries of a call that
// ended: the lines a search matched, the output of a command, the text an
// MCP tool returned.
func finishRender(cwd, tool string, result json.RawMessage) ([]sdk.ToolCallLocation, []sdk.ToolCallContent) {
	var r map[string]json.RawMessage
	if len(result) == 0 || json.Unmarshal(result, &r) != nil {
		return nil, nil
	}
	switch {
	case tool == "shell.run":
		var sh struct {
			Stdout string `json:"stdout"`
			Stderr string `json:"stderr"`
		}
		if json.Unmarshal(r["shell"], &sh) != nil {
			return nil, nil
		}
		text := sh.Stdout
		if sh.Stderr != "" {
			if text != "" && !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			text += sh.Stderr
		}
		return nil, textContent(text)
	case tool == "fs.search":
		var s struct {
			Matches []struct {
				Path string `json:"path"`
				Line int    `json:"line"`
			} `json:"matches"`
		}
		if json.Unmarshal(r["filesystem"], &s) != nil {
			return nil, nil
		}
		var locs []sdk.ToolCallLocation
		for _, m := range s.Matches {
			if len(locs) == maxLocations {
				break
			}
			if p, ok := located(cwd, m.Path); ok {
				loc := sdk.ToolCallLocation{Path: p}
				if m.Line > 0 {
					loc.Line = sdk.Ptr(m.Line)
				}
				locs = append(locs, loc)
			}
		}
		return locs, nil
	case strings.HasPrefix(tool, "mcp/"):
		// The server's text blocks: one string, or a list of them.
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(r["mcp"], &m) != nil {
			return nil, nil
		}
		var one string
		if json.Unmarshal(m.Content, &one) == nil {
			return nil, textContent(one)
		}
		var blocks []string
		if json.Unmarshal(m.Content, &blocks) != nil {
			return nil, nil
		}
		var out []sdk.ToolCallContent
		for _, b := range blocks {
			out = append(out, textContent(b)...)
		}
		return nil, out
	}
	return nil, nil
}

// textContent is text as one content block, cut to maxContentText with a
// note of what was left out; nothing for empty text.
func textContent(text string) []sdk.ToolCallContent {
	if text == "" {
		return nil
	}
	if len(text) > maxContentText {
		n := len(text)
		text = textx.Cut(text, maxContentText) + "\n[… " + strconv.Itoa(n-maxContentText) + " more bytes]"
	}
	return []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}
}
