package fstools

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

const (
	handedBody  = "the handed report\nline two\n"
	swappedBody = "a swapped report\nline two\n"
)

// pinned returns a fixture holding report.md (handedBody) and other.md,
// and an agent's tools pinned to report.md at handedBody's revision.
func pinned(t *testing.T, opts Options) (*fixture, *Tools) {
	t.Helper()
	f := newFixture(t, opts)
	f.write("report.md", handedBody)
	f.write("other.md", "another line two\n")
	agent, err := f.tools.WithPins([]Pin{{Path: "./report.md", Revision: Revision([]byte(handedBody))}})
	if err != nil {
		t.Fatal(err)
	}
	return f, agent
}

// wantArtifactChanged checks err is artifact_changed on report.md naming
// the handed and the current revision, and that no byte of the swapped
// file reaches the error.
func wantArtifactChanged(t *testing.T, err error, current string) {
	t.Helper()
	wantCode(t, err, ArtifactChanged)
	var e *Error
	errors.As(err, &e)
	if e.Path != "report.md" || e.Handed != Revision([]byte(handedBody)) || e.Current != current {
		t.Fatalf("artifact_changed names path %q, handed %q, current %q; want report.md, %s, %s", e.Path, e.Handed, e.Current, Revision([]byte(handedBody)), current)
	}
	if msg := err.Error(); !strings.Contains(msg, e.Handed) || !strings.Contains(msg, e.Current) || strings.Contains(msg, "swapped") {
		t.Fatalf("message %q must name both revisions and no byte of the file", msg)
	}
}

// TestHandedFileReadsOnlyItsHandedRevision: an agent's fs.read of a file
// it was handed returns bytes only when they are the handed revision; a
// file swapped after the agent started fails with artifact_changed, naming
// the path and both revisions, and returns nothing of the new bytes. The
// same tools without the pin (the parent's) read the new bytes.
func TestHandedFileReadsOnlyItsHandedRevision(t *testing.T) {
	t.Parallel()
	f, agent := pinned(t, Options{})
	r, err := agent.Read(bg(), ReadArgs{Path: "report.md"})
	if err != nil || r.Text != handedBody || r.Revision != Revision([]byte(handedBody)) {
		t.Fatalf("unchanged handed file: %+v %v", r, err)
	}
	// A page of it is checked against the whole file's revision.
	if r, err := agent.Read(bg(), ReadArgs{Path: "report.md", Offset: 4, MaxBytes: 6}); err != nil || r.Text != handedBody[4:10] {
		t.Fatalf("a page of the unchanged file: %+v %v", r, err)
	}

	f.write("report.md", swappedBody)
	for _, path := range []string{"report.md", "./report.md", f.path("report.md")} {
		r, err := agent.Read(bg(), ReadArgs{Path: path})
		if r != nil {
			t.Fatalf("%s: a swapped handed file returned %+v", path, r)
		}
		wantArtifactChanged(t, err, Revision([]byte(swappedBody)))
	}
	if r, err := agent.Read(bg(), ReadArgs{Path: "report.md", Offset: 4, MaxBytes: 6}); r != nil {
		t.Fatalf("a page of the swapped file: %+v", r)
	} else {
		wantArtifactChanged(t, err, Revision([]byte(swappedBody)))
	}
	// Back to the handed bytes, the file reads again.
	f.write("report.md", handedBody)
	if r, err := agent.Read(bg(), ReadArgs{Path: "report.md"}); err != nil || r.Text != handedBody {
		t.Fatalf("the handed bytes restored: %+v %v", r, err)
	}
	// The pin is the agent's: the parent's tools read whatever is there,
	// and a file not handed reads as ever.
	f.write("report.md", swappedBody)
	if r, err := f.tools.Read(bg(), ReadArgs{Path: "report.md"}); err != nil || r.Text != swappedBody {
		t.Fatalf("unpinned tools: %+v %v", r, err)
	}
	if r, err := agent.Read(bg(), ReadArgs{Path: "other.md"}); err != nil || r.Text != "another line two\n" {
		t.Fatalf("a file not handed: %+v %v", r, err)
	}
	// The result's JSON, as the model sees it, carries the code.
	if _, err := agent.Call(bg(), "fs.read", json.RawMessage(`{"path":"report.md"}`)); !errors.Is(err, ArtifactChanged) {
		t.Fatalf("Call: %v", err)
	}
}

// TestHandedFileSwappedDuringTheReadReturnsOnlyHandedBytes: a swap in the
// middle of the read (an injected seam between the read's chunks) never
// returns other bytes than the handed ones. A file rewritten in place is
// read again and fails artifact_changed with the new bytes' revision; a
// file renamed over the path while the handed one is open is read to its
// end from the open handle, whose bytes are the handed revision.
func TestHandedFileSwappedDuringTheReadReturnsOnlyHandedBytes(t *testing.T) {
	t.Parallel()
	t.Run("rewritten in place", func(t *testing.T) {
		t.Parallel()
		f, agent := pinned(t, Options{})
		swapped := false
		agent.hooks.afterReadChunk = func(rel string) {
			if rel == "report.md" && !swapped {
				swapped = true
				if err := os.WriteFile(f.path("report.md"), []byte(swappedBody+"and more\n"), 0o644); err != nil {
					t.Error(err)
				}
			}
		}
		r, err := agent.Read(bg(), ReadArgs{Path: "report.md"})
		if !swapped || r != nil {
			t.Fatalf("swapped %v, result %+v", swapped, r)
		}
		wantArtifactChanged(t, err, Revision([]byte(swappedBody+"and more\n")))
	})
	t.Run("renamed over the path", func(t *testing.T) {
		t.Parallel()
		f, agent := pinned(t, Options{})
		swapped := false
		agent.hooks.afterReadChunk = func(rel string) {
			if rel == "report.md" && !swapped {
				swapped = true
				f.write("new.md", swappedBody)
				if err := os.Rename(f.path("new.md"), f.path("report.md")); err != nil {
					t.Error(err)
				}
			}
		}
		r, err := agent.Read(bg(), ReadArgs{Path: "report.md"})
		if !swapped || err != nil || r.Text != handedBody || r.Revision != Revision([]byte(handedBody)) {
			t.Fatalf("swapped %v: %+v %v, want the handed bytes read from the open file", swapped, r, err)
		}
		// The next read sees the new file, and refuses it.
		_, err = agent.Read(bg(), ReadArgs{Path: "report.md"})
		wantArtifactChanged(t, err, Revision([]byte(swappedBody)))
	})
}

// TestHandedFileSearchedOnlyAtItsHandedRevision: fs.search exposes a
// handed file's lines only from bytes of the handed revision: a swapped
// one fails the search with artifact_changed, and its lines are never
// returned; before the swap its matches are found as ever.
func TestHandedFileSearchedOnlyAtItsHandedRevision(t *testing.T) {
	t.Parallel()
	f, agent := pinned(t, Options{})
	r, err := agent.Search(bg(), SearchArgs{Path: ".", Query: "line two"})
	if err != nil || len(r.Matches) != 2 || r.Matches[1].Path != "report.md" {
		t.Fatalf("unchanged: %+v %v", r, err)
	}
	f.write("report.md", swappedBody)
	r, err = agent.Search(bg(), SearchArgs{Path: ".", Query: "line two"})
	if r != nil {
		t.Fatalf("a search over a swapped handed file returned %+v", r)
	}
	wantArtifactChanged(t, err, Revision([]byte(swappedBody)))
	// A swap in the middle of the search's read is caught as in fs.read.
	f.write("report.md", handedBody)
	swapped := false
	agent.hooks.afterReadChunk = func(rel string) {
		if rel == "report.md" && !swapped {
			swapped = true
			os.WriteFile(f.path("report.md"), []byte(swappedBody), 0o644)
		}
	}
	_, err = agent.Search(bg(), SearchArgs{Path: ".", Query: "swapped"})
	if !swapped {
		t.Fatal("the seam never ran")
	}
	wantArtifactChanged(t, err, Revision([]byte(swappedBody)))
	// Listing exposes no bytes: it is unchanged by the pin.
	if l, err := agent.List(bg(), ListArgs{Path: "."}); err != nil || len(l.Entries) != 2 {
		t.Fatalf("list: %+v %v", l, err)
	}
}

// TestOwnWriteMovesTheHandedPin: the agent's own committed fs.edit of the
// file it was handed is its own, not a swap: its reads then return what it
// wrote, and a later swap by another writer is refused against the
// revision it wrote.
func TestOwnWriteMovesTheHandedPin(t *testing.T) {
	t.Parallel()
	f, agent := pinned(t, Options{Write: true})
	w, err := agent.Edit(bg(), EditArgs{Path: "report.md", ExpectedRevision: Revision([]byte(handedBody)), OldText: "handed", NewText: "edited"})
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(handedBody, "handed", "edited", 1)
	if r, err := agent.Read(bg(), ReadArgs{Path: "report.md"}); err != nil || r.Text != edited {
		t.Fatalf("after its own edit: %+v %v", r, err)
	}
	f.write("report.md", swappedBody)
	_, err = agent.Read(bg(), ReadArgs{Path: "report.md"})
	var e *Error
	if !errors.As(err, &e) || e.Code != ArtifactChanged || e.Handed != w.Revision || e.Current != Revision([]byte(swappedBody)) {
		t.Fatalf("a swap after its own edit: %v", err)
	}
}

// TestWithPinsRefusesWhatIsNotAHandedFile: a pin names a workspace file by
// a workspace-relative path and a revision as fs.read gives it.
func TestWithPinsRefusesWhatIsNotAHandedFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	rev := Revision([]byte("x"))
	for name, pins := range map[string][]Pin{
		"the workspace itself":  {{Path: ".", Revision: rev}},
		"a path with ..":        {{Path: "../x", Revision: rev}},
		"an absolute outsider":  {{Path: "/etc/passwd", Revision: rev}},
		"an empty path":         {{Path: "", Revision: rev}},
		"an uppercase revision": {{Path: "a", Revision: strings.ToUpper(rev)}},
		"a short revision":      {{Path: "a", Revision: rev[:63]}},
		"two revisions":         {{Path: "a", Revision: rev}, {Path: "./a", Revision: Revision([]byte("y"))}},
	} {
		if _, err := f.tools.WithPins(pins); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestHandedFileIsEditedOnlyAtItsHandedRevision: fs.edit builds its new
// bytes from the file's current ones, so an edit is a use of them. A
// handed file swapped after the agent started is not edited, even with
// the swapped revision as expected_revision (which artifact_changed
// names): the call fails with artifact_changed, the file keeps the
// swapped bytes, and the pin does not move onto them, so the swap is not
// laundered into the agent's "own" revision for its later reads.
func TestHandedFileIsEditedOnlyAtItsHandedRevision(t *testing.T) {
	t.Parallel()
	f, agent := pinned(t, Options{Write: true})
	f.write("report.md", swappedBody)
	swapped := Revision([]byte(swappedBody))
	w, err := agent.Edit(bg(), EditArgs{Path: "report.md", ExpectedRevision: swapped, OldText: "line two", NewText: "line 2"})
	if w != nil {
		t.Fatalf("an edit of the swapped handed file committed %+v", w)
	}
	wantArtifactChanged(t, err, swapped)
	if got := f.read("report.md"); got != swappedBody {
		t.Fatalf("the refused edit changed the file to %q", got)
	}
	if _, err := agent.Read(bg(), ReadArgs{Path: "report.md"}); err == nil {
		t.Fatal("after the refused edit, the swapped bytes read as the agent's own")
	}
	// A whole replacement uses none of the swapped bytes: it is the
	// agent's own file, and its pin moves there.
	mine := "the agent's own report\n"
	if _, err := agent.Write(bg(), WriteArgs{Path: "report.md", Text: mine, ExpectedRevision: &swapped}); err != nil {
		t.Fatalf("a replacement of the swapped file: %v", err)
	}
	if r, err := agent.Read(bg(), ReadArgs{Path: "report.md"}); err != nil || r.Text != mine {
		t.Fatalf("after its own replacement: %+v %v", r, err)
	}
}
