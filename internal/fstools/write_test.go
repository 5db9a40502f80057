package fstools

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/authority"
)

func revOf(s string) *string { return ptr(Revision([]byte(s))) }

// M01: a create-only write fails with conflict when the file exists.
func TestWriteCreateOnlyConflictsWithExistingFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	r, err := f.tools.Write(bg(), WriteArgs{Path: "new.txt", Text: "hello"})
	if err != nil || !r.Created || !r.Committed || r.Revision != Revision([]byte("hello")) || r.SizeBytes != 5 {
		t.Fatalf("%+v %v", r, err)
	}
	fi, _ := os.Stat(f.path("new.txt"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file mode %v, want 0600", fi.Mode())
	}
	_, err = f.tools.Write(bg(), WriteArgs{Path: "new.txt", Text: "again"})
	wantCode(t, err, Conflict)
	if f.read("new.txt") != "hello" {
		t.Fatal("create-only write replaced the file")
	}
	assertNoTemps(t, f)
}

// M02: a replace with a stale revision is a conflict and changes nothing.
func TestWriteStaleRevisionConflicts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	f.write("a.txt", "v2")
	_, err := f.tools.Write(bg(), WriteArgs{Path: "a.txt", Text: "v3", ExpectedRevision: revOf("v1")})
	wantCode(t, err, Conflict)
	r, err := f.tools.Write(bg(), WriteArgs{Path: "a.txt", Text: "v3", ExpectedRevision: revOf("v2")})
	if err != nil || r.Created || f.read("a.txt") != "v3" {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = f.tools.Write(bg(), WriteArgs{Path: "missing.txt", Text: "x", ExpectedRevision: revOf("v2")})
	wantCode(t, err, NotFound)
	assertNoTemps(t, f)
}

// M03: an edit is exactly one literal replacement.
func TestEditReplacesExactlyOneOccurrence(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	f.write("e.txt", "alpha beta gamma beta aaa")
	rev := Revision([]byte("alpha beta gamma beta aaa"))
	tests := []struct {
		name, old string
		code      Code
	}{
		{"zero occurrences", "delta", MatchNotUnique},
		{"two occurrences", "beta", MatchNotUnique},
		{"overlapping occurrences", "aa", MatchNotUnique},
	}
	for _, tt := range tests {
		_, err := f.tools.Edit(bg(), EditArgs{Path: "e.txt", ExpectedRevision: rev, OldText: tt.old, NewText: "X"})
		wantCode(t, err, tt.code)
	}
	r, err := f.tools.Edit(bg(), EditArgs{Path: "e.txt", ExpectedRevision: rev, OldText: "gamma", NewText: "Γ"})
	want := "alpha beta Γ beta aaa"
	if err != nil || f.read("e.txt") != want || r.Revision != Revision([]byte(want)) || r.Created {
		t.Fatalf("%+v %v %q", r, err, f.read("e.txt"))
	}
	_, err = f.tools.Edit(bg(), EditArgs{Path: "e.txt", ExpectedRevision: rev, OldText: "alpha", NewText: "A"})
	wantCode(t, err, Conflict)
	_, err = f.tools.Edit(bg(), EditArgs{Path: "nope.txt", ExpectedRevision: rev, OldText: "alpha", NewText: "A"})
	wantCode(t, err, NotFound)
	assertNoTemps(t, f)
}

// M04: a writer that changes the file after it was checked, before install,
// makes the mutation a conflict; the other writer's bytes survive.
func TestExternalWriterBeforeInstallConflicts(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"write", "edit", "create"} {
		t.Run(op, func(t *testing.T) {
			f := newFixture(t, Options{Write: true})
			if op != "create" {
				f.write("a.txt", "original")
			}
			f.tools.hooks.beforeInstall = func(string) {
				if err := os.WriteFile(f.path("a.txt"), []byte("external"), 0o644); err != nil {
					t.Error(err)
				}
			}
			var err error
			switch op {
			case "write":
				_, err = f.tools.Write(bg(), WriteArgs{Path: "a.txt", Text: "mine", ExpectedRevision: revOf("original")})
			case "edit":
				_, err = f.tools.Edit(bg(), EditArgs{Path: "a.txt", ExpectedRevision: *revOf("original"), OldText: "orig", NewText: "mine"})
			case "create":
				_, err = f.tools.Write(bg(), WriteArgs{Path: "a.txt", Text: "mine"})
			}
			wantCode(t, err, Conflict)
			if f.read("a.txt") != "external" {
				t.Fatalf("external bytes lost: %q", f.read("a.txt"))
			}
			assertNoTemps(t, f)
		})
	}
}

// M05: replacing a hard-linked file installs a new inode; the other link
// keeps the old bytes (hard-link identity is not preserved, and a write never
// goes through a link into another file).
func TestReplaceDoesNotWriteThroughHardLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	f.write("a.txt", "shared")
	if err := os.Link(f.path("a.txt"), f.path("b.txt")); err != nil {
		t.Skip("hard links unsupported:", err)
	}
	if _, err := f.tools.Write(bg(), WriteArgs{Path: "a.txt", Text: "new", ExpectedRevision: revOf("shared")}); err != nil {
		t.Fatal(err)
	}
	if f.read("a.txt") != "new" || f.read("b.txt") != "shared" {
		t.Fatalf("a=%q b=%q", f.read("a.txt"), f.read("b.txt"))
	}
}

// M06: ordinary permission bits are preserved, special bits cleared.
func TestReplacePreservesPermissionBitsAndClearsSpecialBits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	f.write("x.sh", "#!/bin/sh\n")
	if err := os.Chmod(f.path("x.sh"), 0o755|os.ModeSetuid|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tools.Edit(bg(), EditArgs{Path: "x.sh", ExpectedRevision: *revOf("#!/bin/sh\n"), OldText: "sh\n", NewText: "sh -e\n"}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(f.path("x.sh"))
	if fi.Mode() != 0o755 {
		t.Fatalf("mode %v, want 0755 without special bits", fi.Mode())
	}
}

func TestMutationRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true, Limits: Limits{MaxFileBytes: 4}})
	f.write("dir/x", "x")
	_, err := f.tools.Write(bg(), WriteArgs{Path: "nodir/a.txt", Text: "x"})
	wantCode(t, err, NotFound) // parents must exist
	_, err = f.tools.Write(bg(), WriteArgs{Path: "dir", Text: "x"})
	wantCode(t, err, NotFile)
	_, err = f.tools.Write(bg(), WriteArgs{Path: ".", Text: "x"})
	wantCode(t, err, NotFile)
	if _, err = f.tools.Write(bg(), WriteArgs{Path: "four", Text: "1234"}); err != nil {
		t.Fatalf("at the file limit: %v", err)
	}
	_, err = f.tools.Write(bg(), WriteArgs{Path: "five", Text: "12345"})
	wantLimit(t, err, FilesystemWork)
	_, err = f.tools.Write(bg(), WriteArgs{Path: "r", Text: "x", ExpectedRevision: ptr("ABC")})
	wantInvalid(t, err)
	_, err = f.tools.Edit(bg(), EditArgs{Path: "four", ExpectedRevision: *revOf("1234"), OldText: "", NewText: "x"})
	wantInvalid(t, err)

	ro := newFixture(t, Options{})
	_, err = ro.tools.Write(bg(), WriteArgs{Path: "a", Text: "x"})
	wantDenied(t, err, authority.RuleToolUnavailable)
	assertNoTemps(t, f)
}

func TestReplaceNeedsReadAuthorityCreateDoesNot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true, Decide: func(k authority.ResourceKind, rel string) authority.Decision {
		return authority.Decision{Allowed: k == authority.ResourceWrite, Layer: "p", RuleID: "write-only"}
	}})
	if _, err := f.tools.Write(bg(), WriteArgs{Path: "a", Text: "x"}); err != nil {
		t.Fatalf("create with write authority only: %v", err)
	}
	_, err := f.tools.Write(bg(), WriteArgs{Path: "a", Text: "y", ExpectedRevision: revOf("x")})
	wantDenied(t, err, "write-only")
}

func TestPolicyRevokedBeforeInstallStopsTheMutation(t *testing.T) {
	t.Parallel()
	var revoked bool
	f := newFixture(t, Options{Write: true, Decide: func(authority.ResourceKind, string) authority.Decision {
		return authority.Decision{Allowed: !revoked, Layer: "p", RuleID: "revocable"}
	}})
	f.tools.hooks.beforeInstall = func(string) { revoked = true }
	_, err := f.tools.Write(bg(), WriteArgs{Path: "a", Text: "x"})
	wantDenied(t, err, "revocable")
	if _, err := os.Stat(f.path("a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("file installed after revocation")
	}
	assertNoTemps(t, f)
}

func TestCancellationBeforeInstallLeavesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	c, cancel := contextWithCancel()
	f.tools.hooks.beforeInstall = func(string) { cancel() }
	_, err := f.tools.Write(c, WriteArgs{Path: "a", Text: "x"})
	if !isCanceled(err) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(f.path("a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("file installed after cancellation")
	}
	assertNoTemps(t, f)
}

// Mutations from tools sharing a workspace (a root and its children) are
// serialized: concurrent edits of one revision commit exactly once.
func TestMutationsAreSerializedAcrossTheTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	f.write("counter", "0")
	child, err := New(Options{Workspace: f.ws, Write: true, Decide: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]error, 8)
	for i := range results {
		tools := f.tools
		if i%2 == 1 {
			tools = child
		}
		wg.Go(func() {
			_, results[i] = tools.Edit(bg(), EditArgs{Path: "counter", ExpectedRevision: *revOf("0"), OldText: "0", NewText: "1"})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		if err == nil {
			ok++
		} else if !errors.Is(err, Conflict) {
			t.Fatal(err)
		}
	}
	if ok != 1 || f.read("counter") != "1" {
		t.Fatalf("%d commits, content %q", ok, f.read("counter"))
	}
}

func assertNoTemps(t *testing.T, f *fixture) {
	t.Helper()
	ents, _ := os.ReadDir(f.dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".pablo-tmp-") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

// Concurrent fs.write and fs.edit calls from a root and a child against
// one revision (or all creating one new file), released together from a
// barrier, install exactly once: the revision check and the install are
// under the tree's one mutation gate, so no two writers both pass a check
// against the same revision. Every other writer gets the typed conflict
// (*Error with Code Conflict) and the file holds the winner's text.
func TestConcurrentWritersOfOneRevisionInstallOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	child, err := New(Options{Workspace: f.ws, Write: true, Decide: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		create     bool
	}{{"Replace", "doc", false}, {"Create", "new", true}} {
		t.Run(c.name, func(t *testing.T) {
			if !c.create {
				f.write(c.path, "v0")
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			results := make([]*WriteResult, 8)
			errs := make([]error, 8)
			for i := range results {
				tools := f.tools
				if i%2 == 1 {
					tools = child
				}
				text := "writer " + string(rune('a'+i))
				wg.Go(func() {
					<-start
					switch {
					case c.create:
						results[i], errs[i] = tools.Write(bg(), WriteArgs{Path: c.path, Text: text})
					case i%4 < 2:
						results[i], errs[i] = tools.Write(bg(), WriteArgs{Path: c.path, Text: text, ExpectedRevision: revOf("v0")})
					default:
						results[i], errs[i] = tools.Edit(bg(), EditArgs{Path: c.path, ExpectedRevision: *revOf("v0"), OldText: "v0", NewText: text})
					}
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, err := range errs {
				var fe *Error
				switch {
				case err == nil && winner < 0:
					winner = i
				case err == nil:
					t.Fatalf("writers %d and %d both installed against one revision", winner, i)
				case !errors.As(err, &fe) || fe.Code != Conflict || !errors.Is(err, Conflict):
					t.Fatalf("writer %d: %v, want the typed conflict", i, err)
				}
			}
			if winner < 0 {
				t.Fatal("no writer installed")
			}
			if got := f.read(c.path); got != "writer "+string(rune('a'+winner)) || results[winner].Revision != Revision([]byte(got)) {
				t.Fatalf("%s holds %q, want writer %d's text under its revision", c.path, got, winner)
			}
		})
	}
}
