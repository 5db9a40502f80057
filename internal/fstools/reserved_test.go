package fstools

import (
	"os"
	"testing"
)

// TestReservedFilesAreNeverReadWrittenListedOrSearched: a file the host
// reserves (its live trace, its ledger) is denied to fs.read, fs.write and
// fs.edit under RuleReserved, by every name it has (a hard link included),
// and fs.list and fs.search leave it out, so the model never reads its own
// trace. The files beside it are untouched by the reservation.
func TestReservedFilesAreNeverReadWrittenListedOrSearched(t *testing.T) {
	t.Parallel()
	reserved := &Reserved{}
	f := newFixture(t, Options{Write: true, Reserved: reserved})
	const marker = "TRACE-LINE-5c1e"
	f.write("trace.jsonl", marker+"\n")
	f.write("notes.txt", marker+" in a note\n")
	if err := os.Link(f.path("trace.jsonl"), f.path("alias.jsonl")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(f.path("trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	reserved.Add(fi)
	rev := Revision([]byte(marker + "\n"))
	for _, name := range []string{"trace.jsonl", "alias.jsonl"} {
		r, err := f.tools.Read(bg(), ReadArgs{Path: name})
		wantDenied(t, err, RuleReserved)
		if r != nil {
			t.Fatalf("fs.read %s returned %+v", name, r)
		}
		_, err = f.tools.Write(bg(), WriteArgs{Path: name, Text: "overwritten\n", ExpectedRevision: &rev})
		wantDenied(t, err, RuleReserved)
		_, err = f.tools.Edit(bg(), EditArgs{Path: name, ExpectedRevision: rev, OldText: marker, NewText: "edited"})
		wantDenied(t, err, RuleReserved)
	}
	if got := f.read("trace.jsonl"); got != marker+"\n" {
		t.Fatalf("the reserved file now holds %q", got)
	}
	l, err := f.tools.List(bg(), ListArgs{Path: "."})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 1 || l.Entries[0].Path != "notes.txt" {
		t.Fatalf("fs.list shows %+v, want only notes.txt", l.Entries)
	}
	s, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: marker})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Matches) != 1 || s.Matches[0].Path != "notes.txt" {
		t.Fatalf("fs.search found %+v, want only the line of notes.txt", s.Matches)
	}
	if _, err := f.tools.Read(bg(), ReadArgs{Path: "notes.txt"}); err != nil {
		t.Fatalf("a file beside the reserved one: %v", err)
	}
}
