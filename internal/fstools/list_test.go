package fstools

import (
	"fmt"
	"os"
	"testing"
)

func TestListSortsByBytesAndPaginates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for _, n := range []string{"b", "B", "a.txt", "é", "z"} {
		f.write("d/"+n, "x")
	}
	if err := os.Mkdir(f.path("d/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"d/B", TypeFile}, {"d/a.txt", TypeFile}, {"d/b", TypeFile}, {"d/sub", TypeDirectory}, {"d/z", TypeFile}, {"d/é", TypeFile}}
	var got []Entry
	off := int64(0)
	for {
		l, err := f.tools.List(bg(), ListArgs{Path: "d", Offset: off, MaxEntries: 4})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Entries...)
		if l.NextOffset == nil {
			break
		}
		off = *l.NextOffset
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	l, err := f.tools.List(bg(), ListArgs{Path: "d", Offset: 6})
	if err != nil || len(l.Entries) != 0 || l.NextOffset != nil || l.Truncated {
		t.Fatalf("offset at end: %+v %v", l, err)
	}
	_, err = f.tools.List(bg(), ListArgs{Path: "d", Offset: 7})
	wantCode(t, err, InvalidRange)
	_, err = f.tools.List(bg(), ListArgs{Path: "d/b"})
	wantCode(t, err, NotDirectory)
	_, err = f.tools.List(bg(), ListArgs{Path: "nope"})
	wantCode(t, err, NotFound)
	root, err := f.tools.List(bg(), ListArgs{Path: "."})
	if err != nil || len(root.Entries) != 1 || root.Entries[0].Path != "d" {
		t.Fatalf("%+v %v", root, err)
	}
}

func TestListMaxEntriesBoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Limits: Limits{MaxEntries: 3}})
	for i := range 3 {
		f.write(fmt.Sprintf("three/%d", i), "")
		f.write(fmt.Sprintf("four/%d", i), "")
	}
	f.write("four/3", "")
	if _, err := f.tools.List(bg(), ListArgs{Path: "three"}); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, err := f.tools.List(bg(), ListArgs{Path: "four"})
	wantLimit(t, err, FilesystemWork)
}

func TestListNonUTF8NameIsUnsupportedEncoding(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	if err := os.WriteFile(f.path("bad\xffname"), nil, 0o644); err != nil {
		t.Skip("filesystem rejects non-UTF-8 names:", err)
	}
	f.write("ok.txt", "needle\n")
	_, err := f.tools.List(bg(), ListArgs{Path: "."})
	wantCode(t, err, UnsupportedEncoding)
	s, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "needle"})
	if err != nil || len(s.Matches) != 1 {
		t.Fatalf("search skips the bad name: %+v %v", s, err)
	}
}
