package main

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// mdRenderer draws CommonMark for the terminal: goldmark parses, and the
// blocks are drawn with Lip Gloss styles, wrapped at the width. It is not
// Glamour on purpose: Glamour links chroma, whose lexer and style
// registries are built by package initialisers in every process of the
// binary, `pablo acp` included — 5.8 MB allocated at start and 8 MiB more
// idle RSS (measured with GODEBUG=inittrace=1 and TestACPProcessEndsCleanly;
// the README's dependency table says so). Code blocks are drawn as they
// are, without highlighting.
type mdRenderer struct {
	width int
	p     parser.Parser
}

// The styles of the drawn Markdown.
type mdStyles struct {
	heading, strong, emph, code, link, quote, rule lipgloss.Style
}

func newMDStyles() mdStyles {
	return mdStyles{
		heading: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
		strong:  lipgloss.NewStyle().Bold(true),
		emph:    lipgloss.NewStyle().Italic(true),
		code:    lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		link:    lipgloss.NewStyle().Underline(true),
		quote:   lipgloss.NewStyle().Faint(true),
		rule:    lipgloss.NewStyle().Faint(true),
	}
}

// newMDRenderer is a renderer wrapping at width columns (at least 20).
func newMDRenderer(width int) *mdRenderer {
	p := parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(parser.DefaultInlineParsers()...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
	return &mdRenderer{width: max(width, 20), p: p}
}

// Render draws src. Raw HTML is shown as text, never interpreted.
func (r *mdRenderer) Render(src string) string {
	source := []byte(src)
	doc := r.p.Parse(text.NewReader(source))
	d := mdDraw{src: source, st: newMDStyles()}
	var blocks []string
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if s := d.block(n, r.width); s != "" {
			blocks = append(blocks, s)
		}
	}
	return strings.Join(blocks, "\n\n")
}

type mdDraw struct {
	src []byte
	st  mdStyles
}

// block draws one block node at width columns.
func (d mdDraw) block(n ast.Node, width int) string {
	switch n := n.(type) {
	case *ast.Heading:
		return d.wrap(d.st.heading.Render(d.inlines(n)), width)
	case *ast.Paragraph, *ast.TextBlock:
		return d.wrap(d.inlines(n), width)
	case *ast.ThematicBreak:
		return d.st.rule.Render(strings.Repeat("─", min(width, 40)))
	case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
		return d.lines(n)
	case *ast.Blockquote:
		inner := d.children(n, width-2, "\n\n")
		return prefixLines(inner, d.st.quote.Render("│ "), d.st.quote.Render("│ "))
	case *ast.List:
		return d.list(n, width)
	}
	return d.children(n, width, "\n\n")
}

// children draws n's child blocks, joined by sep.
func (d mdDraw) children(n ast.Node, width int, sep string) string {
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := d.block(c, width); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

// list draws a list: "• " or "N. " before each item, its continuation
// lines indented under the item's text.
func (d mdDraw) list(l *ast.List, width int) string {
	sep := "\n"
	if !l.IsTight {
		sep = "\n\n"
	}
	var items []string
	num := l.Start
	for c := l.FirstChild(); c != nil; c = c.NextSibling() {
		marker := "• "
		if l.IsOrdered() {
			marker = strconv.Itoa(num) + ". "
			num++
		}
		body := d.children(c, width-len(marker), sep)
		items = append(items, prefixLines(body, marker, strings.Repeat(" ", len(marker))))
	}
	return strings.Join(items, sep)
}

// lines are a code or HTML block's lines as written, indented.
func (d mdDraw) lines(n ast.Node) string {
	var b strings.Builder
	ls := n.Lines()
	for i := 0; i < ls.Len(); i++ {
		seg := ls.At(i)
		line := strings.TrimRight(string(seg.Value(d.src)), "\n")
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("  ")
		b.WriteString(d.st.code.Render(line))
	}
	return b.String()
}

// inlines draws n's inline children as one styled string.
func (d mdDraw) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		d.inline(&b, c)
	}
	return b.String()
}

func (d mdDraw) inline(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		b.Write(n.Segment.Value(d.src))
		switch {
		case n.HardLineBreak():
			b.WriteByte('\n')
		case n.SoftLineBreak():
			b.WriteByte(' ')
		}
	case *ast.String:
		b.Write(n.Value)
	case *ast.CodeSpan:
		b.WriteString(d.st.code.Render(d.plain(n)))
	case *ast.Emphasis:
		if n.Level >= 2 {
			b.WriteString(d.st.strong.Render(d.inlines(n)))
		} else {
			b.WriteString(d.st.emph.Render(d.inlines(n)))
		}
	case *ast.Link:
		label := d.inlines(n)
		b.WriteString(d.st.link.Render(label))
		if dest := string(n.Destination); dest != "" && dest != label {
			b.WriteString(" (" + dest + ")")
		}
	case *ast.AutoLink:
		b.WriteString(d.st.link.Render(string(n.URL(d.src))))
	case *ast.Image:
		b.WriteString("[image: " + d.plain(n) + "]")
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			b.Write(seg.Value(d.src))
		}
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			d.inline(b, c)
		}
	}
}

// plain is n's text without styles.
func (d mdDraw) plain(n ast.Node) string {
	var b bytes.Buffer
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(d.src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// wrap breaks s at word boundaries to width columns, styles kept.
func (d mdDraw) wrap(s string, width int) string {
	return ansi.Wrap(s, max(width, 10), "")
}

// prefixLines puts first before s's first line and rest before each other.
func prefixLines(s, first, rest string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if i == 0 {
			lines[i] = first + l
		} else {
			lines[i] = rest + l
		}
	}
	return strings.Join(lines, "\n")
}
