package main

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestTUIMarkdownDrawsBlocksWithoutTheirMarkers: headings, emphasis,
// code spans and links are drawn without the characters that mark them;
// lists get bullets and numbers; code blocks and raw HTML keep their text
// as written (HTML is never interpreted); no drawn line is wider than the
// width.
func TestTUIMarkdownDrawsBlocksWithoutTheirMarkers(t *testing.T) {
	src := "# Result\n\nThe total is **42**, *about*, see `go test` and [the docs](https://example.test/d), " +
		"and a long sentence that goes on well past the width the renderer was given.\n\n" +
		"- first\n- second\n\n3. three\n4. four\n\n> quoted\n\n```\nif a < b { *p = 1 }\n```\n\n<script>alert(1)</script>\n"
	out := ansi.Strip(newMDRenderer(40).Render(src))
	for _, want := range []string{"Result", "The total is 42, about, see go test", "the docs (https://example.test/d)",
		"• first\n• second", "3. three\n4. four", "│ quoted", "  if a < b { *p = 1 }", "<script>alert(1)</script>"} {
		if !strings.Contains(out, want) {
			t.Errorf("the drawing lacks %q:\n%s", want, out)
		}
	}
	for _, marker := range []string{"# Result", "**", "`go test`", "](", "```"} {
		if strings.Contains(out, marker) {
			t.Errorf("the drawing keeps the marker %q:\n%s", marker, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if w := ansi.StringWidth(line); w > 40 {
			t.Errorf("a line is %d columns wide, over 40: %q", w, line)
		}
	}
}
