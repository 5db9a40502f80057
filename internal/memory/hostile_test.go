package memory

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAHostilePatchIsATypedErrorNeverAWriteNorAHang defends the rule that
// a proposed patch is data a reviewer reads, never authority: whatever a
// hostile patch says (a path outside the graph, a binary or symlink
// section, a huge or absurd hunk, one path twice), review answers with a
// typed error or a review of records under the graph paths only, within
// a bound of time, and writes nothing.
func TestAHostilePatchIsATypedErrorNeverAWriteNorAHang(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(baseFiles())}
	s := r.store(Options{})
	ix, err := s.Index(context.Background(), pin)
	if err != nil {
		t.Fatal(err)
	}
	head := "From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\nProposed against memory commit " + pin.Commit + ".\n---\n"
	add := func(p, body string) string {
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		var b strings.Builder
		b.WriteString("diff --git a/" + p + " b/" + p + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + p + "\n")
		b.WriteString("@@ -0,0 +1," + strconv.Itoa(len(lines)) + " @@\n")
		for _, l := range lines {
			b.WriteString("+" + l + "\n")
		}
		return b.String()
	}
	rec := record("newsvc", "service", "owner: o", "repo: r").data
	cases := map[string]string{
		"a path that climbs out":        add("records/../../etc/passwd", rec),
		"an absolute path":              add("/etc/passwd", rec),
		"a path outside the graph":      add("docs/x.md", rec),
		"a dot-dot within the graph":    add("records/service/../service/newsvc.md", rec),
		"a binary section":              "diff --git a/records/service/bin.md b/records/service/bin.md\nnew file mode 100644\nGIT binary patch\nliteral 4\nLcmZ?l\n\n",
		"a symlink section":             "diff --git a/records/service/link.md b/records/service/link.md\nnew file mode 120000\n--- /dev/null\n+++ b/records/service/link.md\n@@ -0,0 +1 @@\n+../../../etc/passwd\n\\ No newline at end of file\n",
		"an absurd hunk start":          "diff --git a/records/service/billing.md b/records/service/billing.md\n--- a/records/service/billing.md\n+++ b/records/service/billing.md\n@@ -99999999999999999999,1 +1,1 @@\n-x\n+y\n",
		"a hunk past the file":          "diff --git a/records/service/billing.md b/records/service/billing.md\n--- a/records/service/billing.md\n+++ b/records/service/billing.md\n@@ -4000,1 +4000,1 @@\n-x\n+y\n",
		"a hunk before the last":        "diff --git a/records/service/billing.md b/records/service/billing.md\n--- a/records/service/billing.md\n+++ b/records/service/billing.md\n@@ -3,1 +3,1 @@\n-x\n+y\n@@ -1,1 +1,1 @@\n-x\n+y\n",
		"the same path twice":           add("records/service/newsvc.md", rec) + add("records/service/newsvc.md", rec),
		"a record hidden from no scope": add("records/service/billing.md", rec),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			var rv Review
			var err error
			go func() {
				defer close(done)
				rv, err = s.Review(ix, nil, []byte(head+body), All())
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("review hangs")
			}
			if err == nil {
				if rv.Patch != nil {
					for _, f := range rv.Patch.Files {
						if !under(f, ix.graph) || strings.Contains(f, "..") {
							t.Errorf("the reviewed patch writes %s", f)
						}
					}
					seen := map[string]bool{}
					for _, f := range rv.Patch.Files {
						if seen[f] {
							t.Errorf("the reviewed patch changes %s twice: git am cannot take it", f)
						}
						seen[f] = true
					}
				}
				if name != "a record hidden from no scope" {
					t.Errorf("review took it: %+v", rv.Changes)
				}
				return
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Errorf("error %T %v is not a *memory.Error", err, err)
			}
		})
	}
	t.Run("over the bound", func(t *testing.T) {
		big := head + add("records/service/big.md", rec+strings.Repeat("x", MaxPatchBytes))
		_, err := s.Review(ix, nil, []byte(big), All())
		if CodeOf(err) != CodeBadProposal {
			t.Errorf("err = %v, want %s", err, CodeBadProposal)
		}
	})
	t.Run("a base the repository lacks", func(t *testing.T) {
		if _, err := s.Resolve(strings.Repeat("ab", 20)); CodeOf(err) != CodeRefNotCommit {
			t.Errorf("err = %v, want %s", err, CodeRefNotCommit)
		}
	})
}
