package fstools

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

func TestSearchIsDepthFirstSortedAndReportsEachLineOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("b.txt", "x needle needle\r\nno\nneedle")
	f.write("a/z.txt", "needle\n")
	f.write("a.txt", "needle\n")
	f.write("a/b/c.txt", "\n\nneedle here\n")
	f.write("bin.dat", "needle\x00\n")
	f.write("late-bin.txt", "needle\n"+strings.Repeat("y", 200000)+"\xff")
	f.write("Case.txt", "NEEDLE\n")
	r, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Match{
		{Path: "a/b/c.txt", Line: 3, Text: "needle here"},
		{Path: "a/z.txt", Line: 1, Text: "needle"},
		{Path: "a.txt", Line: 1, Text: "needle"},
		{Path: "b.txt", Line: 1, Text: "x needle needle"},
		{Path: "b.txt", Line: 3, Text: "needle"},
	}
	if fmt.Sprint(r.Matches) != fmt.Sprint(want) || r.Truncated || r.Path != "." {
		t.Fatalf("got %+v", r)
	}
}

func TestSearchStopsAtMaxMatchesPlusOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("a.txt", strings.Repeat("hit\n", 3))
	f.write("b.txt", strings.Repeat("hit\n", 3))
	tests := []struct {
		max       int64
		n         int
		truncated bool
	}{{5, 5, true}, {6, 6, false}, {7, 6, false}, {1, 1, true}}
	for _, tt := range tests {
		r, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "hit", MaxMatches: tt.max})
		if err != nil || len(r.Matches) != tt.n || r.Truncated != tt.truncated {
			t.Fatalf("max %d: %d matches truncated=%v err=%v", tt.max, len(r.Matches), r.Truncated, err)
		}
	}
}

func TestSearchSkipsDeniedSubtreesSilently(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Decide: func(_ authority.ResourceKind, rel string) authority.Decision {
		return authority.Decision{Allowed: !authority.WithinRoot("private", rel) && rel != "pub/secret.txt", RuleID: "r"}
	}})
	f.write("private/a.txt", "needle\n")
	f.write("pub/secret.txt", "needle\n")
	f.write("pub/ok.txt", "needle\n")
	r, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "needle"})
	if err != nil || len(r.Matches) != 1 || r.Matches[0].Path != "pub/ok.txt" {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = f.tools.Search(bg(), SearchArgs{Path: "private", Query: "needle"})
	wantDenied(t, err, "r")
}

func TestSearchLimitsBoundaries(t *testing.T) {
	t.Parallel()
	build := func(t *testing.T, l Limits) *fixture {
		f := newFixture(t, Options{Limits: l})
		f.write("d1/d2/f.txt", "0123456789") // 10 bytes at depth 3
		f.write("top.txt", "0123456789")     // 10 bytes at depth 1
		return f                             // entries: d1, top.txt, d2, f.txt = 4
	}
	tests := []struct {
		name string
		l    Limits
		fail bool
	}{
		{"depth at limit", Limits{MaxDepth: 3}, false},
		{"depth one past", Limits{MaxDepth: 2}, true},
		{"entries at limit", Limits{MaxEntries: 4}, false},
		{"entries one past", Limits{MaxEntries: 3}, true},
		{"scan bytes at limit", Limits{MaxScanBytes: 20}, false},
		{"scan bytes one past", Limits{MaxScanBytes: 19}, true},
		{"file bytes at limit", Limits{MaxFileBytes: 10}, false},
		{"file bytes one past", Limits{MaxFileBytes: 9}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := build(t, tt.l)
			_, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "5"})
			if tt.fail {
				wantLimit(t, err, FilesystemWork)
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSearchQueryRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for _, q := range []string{"", "a\nb", "a\rb", "a\x00b", strings.Repeat("q", 4097), "\xff"} {
		_, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: q})
		wantInvalid(t, err)
	}
	if _, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: strings.Repeat("q", 4096)}); err != nil {
		t.Fatalf("4096-byte query: %v", err)
	}
	f.write("file", "x")
	_, err := f.tools.Search(bg(), SearchArgs{Path: "file", Query: "x"})
	wantCode(t, err, NotDirectory)
}

func TestSearchLongLineTextIsTruncated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	line := strings.Repeat("é", MaxMatchTextBytes) + "needle" // 2×cap bytes before the match
	f.write("long.txt", line+"\nneedle\n")
	r, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "needle"})
	if err != nil || len(r.Matches) != 2 {
		t.Fatalf("%+v %v", r, err)
	}
	m := r.Matches[0]
	if !m.TextTruncated || len(m.Text) != MaxMatchTextBytes || !strings.HasPrefix(line, m.Text) || r.Matches[1].Line != 2 {
		t.Fatalf("long line: truncated=%v len=%d", m.TextTruncated, len(m.Text))
	}
}

func TestSearchChildDirectoryRemovedMidWalkIsSkipped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("a/x.txt", "needle\n")
	f.write("b/y.txt", "needle\n")
	f.tools.hooks.betweenCheckAndOpen = func(rel, name string) {
		if name == "a" {
			os.RemoveAll(f.path("a"))
		}
	}
	r, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "needle"})
	if err != nil || len(r.Matches) != 1 || r.Matches[0].Path != "b/y.txt" {
		t.Fatalf("%+v %v", r, err)
	}
}
