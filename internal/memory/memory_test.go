package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func baseFiles() map[string]tfile {
	return map[string]tfile{
		recPath("service", "billing"): record("billing", "service", "owner: payments", "repo: acme/billing", "stack: go", "associations: [team-payments]", "edges:", "  depends_on: [ledger, vault]", "body:Billing charges customers. Version one."),
		recPath("service", "ledger"):  record("ledger", "service", "owner: payments", "repo: acme/ledger", "stack: go", "body:The ledger."),
		recPath("team", "payments"):   record("team-payments", "team", "owner: payments", "body:The payments team."),
		recPath("secret", "vault"):    record("vault", "secret", "owner: security", "body:Where the keys live."),
		"handbook/oncall.md":          text("# On call\nPage the payments team.\nVersion one.\n"),
		"handbook/deploy.md":          text("# Deploy\nRun the pipeline.\n"),
		"elsewhere/ignored.md":        text("Version one.\n"),
	}
}

func TestPinnedReadsIgnoreANewerCommitOnTheRef(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	first := r.commit(baseFiles())
	s := r.store(Options{})
	pin, err := s.Resolve("refs/heads/main")
	if err != nil || pin.Commit != first {
		t.Fatalf("Resolve = %+v, %v; want commit %s", pin, err, first)
	}
	// The ref moves mid-task.
	next := baseFiles()
	next[recPath("service", "billing")] = record("billing", "service", "owner: payments", "body:Billing, version two.")
	next["handbook/oncall.md"] = text("# On call\nVersion two.\n")
	second := r.commit(next)

	ctx := context.Background()
	ix, err := s.Index(ctx, pin)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ix.Read("billing", All())
	if err != nil || !strings.Contains(rec.Body, "Version one") {
		t.Fatalf("Read at the pin = %+v, %v; want version one", rec, err)
	}
	page, err := ix.Search(Query{Text: "version two"}, All())
	if err != nil || page.Total != 0 {
		t.Fatalf("search for the newer text at the pin = %+v, %v; want nothing", page, err)
	}
	g, err := s.Grep(ctx, ix, GrepQuery{Pattern: "Version"}, All())
	if err != nil || len(g.Matches) != 1 || g.Matches[0].Text != "Version one." || g.Matches[0].Revision != first || g.Matches[0].Line != 3 {
		t.Fatalf("grep at the pin = %+v, %v; want handbook/oncall.md:3 at %s", g, err, first)
	}
	now, _ := s.Resolve("refs/heads/main")
	if now.Commit != second {
		t.Fatalf("re-resolving the ref = %s, want the newer %s", now.Commit, second)
	}
}

func TestRecordOutsideScopeIsNeverReturnedCountedOrNamed(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	files := baseFiles()
	files["handbook/vault.md"] = text("vault notes\n")
	files["records/secret/vault-notes.md"] = record("vault-notes", "secret", "body:keys keys keys")
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(files)}
	s := r.store(Options{DocsPaths: []string{"handbook/", "records/"}})
	ix, err := s.Index(context.Background(), pin)
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope{Kinds: []string{"service", "team"}, Paths: []string{"*"}}

	all, _ := ix.Search(Query{}, scope)
	if all.Total != 3 {
		t.Errorf("search total in scope = %d, want 3 (service and team records only)", all.Total)
	}
	for _, q := range []Query{{Text: "keys"}, {Kind: "secret"}, {EdgeTo: "vault"}, {Owner: "security"}} {
		p, _ := ix.Search(q, scope)
		if p.Total != 0 || len(p.Records) != 0 {
			t.Errorf("search %+v = %+v; a hidden record matched or was counted", q, p)
		}
	}
	_, hidden := ix.Read("vault", scope)
	_, missing := ix.Read("no-such-record", scope)
	if !errors.Is(hidden, ErrNotFound) || strings.Replace(hidden.Error(), "vault", "X", 1) != strings.Replace(missing.Error(), "no-such-record", "X", 1) {
		t.Errorf("reading a hidden record = %v; want the same error as a missing one (%v)", hidden, missing)
	}
	if _, err := ix.Read("records/secret/vault.md", scope); !errors.Is(err, ErrNotFound) {
		t.Errorf("reading a hidden record by path = %v, want ErrNotFound", err)
	}
	billing, err := ix.Read("billing", scope)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range billing.Edges {
		if e.To == "vault" {
			t.Errorf("billing's edges name the hidden record: %+v", billing.Edges)
		}
	}
	if len(billing.Edges) != 1 || billing.Edges[0].To != "ledger" {
		t.Errorf("billing's visible edges = %+v, want only depends_on ledger", billing.Edges)
	}
	g, err := s.Grep(context.Background(), ix, GrepQuery{Pattern: "keys"}, scope)
	if err != nil || len(g.Matches) != 0 {
		t.Errorf("grep reached a hidden record's text: %+v, %v", g, err)
	}
	// Paths bound too.
	pathScope := Scope{Kinds: []string{"*"}, Paths: []string{"records/team/", "handbook/deploy.md"}}
	p, _ := ix.Search(Query{}, pathScope)
	if p.Total != 1 || p.Records[0].ID != "team-payments" {
		t.Errorf("search with a path scope = %+v, want only team-payments", p)
	}
	g, _ = s.Grep(context.Background(), ix, GrepQuery{Pattern: "e"}, pathScope)
	for _, m := range g.Matches {
		if m.Path != "handbook/deploy.md" && !strings.HasPrefix(m.Path, "records/team/") {
			t.Errorf("grep outside the path scope: %+v", m)
		}
	}
}

func TestFrontmatterRefusesHostileYAML(t *testing.T) {
	t.Parallel()
	deep := "id: x\nkind: k\nf:\n"
	for i := range 12 {
		deep += strings.Repeat("  ", i+1) + "a:\n"
	}
	deep += strings.Repeat("  ", 13) + "b: c\n"
	many := "id: x\nkind: k\nf:\n"
	for i := range 1100 {
		many += fmt.Sprintf("  - v%d\n", i)
	}
	cases := []struct {
		name string
		fm   string
		kind error
		code Code
	}{
		{"anchor", "id: x\nkind: &k service\n", ErrInvalidRecord, CodeAnchor},
		{"alias", "id: x\nkind: k\na: &a [1, 2]\nb: *a\n", ErrInvalidRecord, CodeAnchor},
		{"alias alone", "id: x\nkind: k\nb: *a\n", ErrInvalidRecord, CodeAlias},
		{"tag", "id: x\nkind: !!str service\n", ErrInvalidRecord, CodeTag},
		{"local tag", "id: x\nkind: !evil service\n", ErrInvalidRecord, CodeTag},
		{"bare tag", "id: x\nkind: ! service\n", ErrInvalidRecord, CodeTag},
		{"duplicate key", "id: x\nkind: k\nid: y\n", ErrInvalidRecord, CodeDuplicateKey},
		{"nested duplicate key", "id: x\nkind: k\nf:\n  a: 1\n  a: 2\n", ErrInvalidRecord, CodeDuplicateKey},
		{"merge key", "id: x\nkind: k\nf:\n  <<: {a: 1}\n", ErrInvalidRecord, CodeMergeKey},
		{"directive", "%YAML 1.2\nid: x\nkind: k\n", ErrInvalidRecord, CodeInvalidYAML},
		{"document end", "id: x\nkind: k\n...\n", ErrInvalidRecord, CodeInvalidYAML},
		{"complex key", "id: x\nkind: k\n? [a]\n: b\n", ErrInvalidRecord, CodeInvalidYAML},
		{"too deep", deep, ErrLimitExceeded, CodeFrontmatterDepth},
		{"too many nodes", many, ErrLimitExceeded, CodeFrontmatterNodes},
		{"too large", "id: x\nkind: k\nf: " + strings.Repeat("a", 17<<10) + "\n", ErrLimitExceeded, CodeFrontmatterSize},
		{"missing id", "kind: k\n", ErrInvalidRecord, CodeMissingField},
		{"missing kind", "id: x\n", ErrInvalidRecord, CodeMissingField},
		{"id not a string", "id: [x]\nkind: k\n", ErrInvalidRecord, CodeFieldShape},
		{"not a mapping", "- a\n", ErrInvalidRecord, CodeFieldShape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRecord("records/x.md", []byte("---\n"+c.fm+"---\nbody\n"), Limits{})
			var e *Error
			if !errors.Is(err, c.kind) || !errors.As(err, &e) || e.Code != c.code || e.Path != "records/x.md" {
				t.Fatalf("ParseRecord = %v (code %q); want %v with code %q at records/x.md", err, CodeOf(err), c.kind, c.code)
			}
		})
	}
	for _, c := range []struct{ name, text string }{{"no frontmatter", "# title\n"}, {"unterminated", "---\nid: x\n"}} {
		if _, err := ParseRecord("r.md", []byte(c.text), Limits{}); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: ParseRecord = %v, want ErrInvalidRecord", c.name, err)
		}
	}
	// Scalars stay text: no type resolution.
	r, err := ParseRecord("r.md", []byte("---\nid: 007\nkind: k\non: yes\nn: 1.50\n---\n"), Limits{})
	if err != nil || r.ID != "007" || r.Fields["on"] != "yes" || r.Fields["n"] != "1.50" {
		t.Fatalf("ParseRecord = %+v, %v; want scalars kept as written", r, err)
	}
}

func TestHostileTreeEntriesAreTypedErrorsOrSkipped(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	files := baseFiles()
	files["records/link.md"] = tfile{mode: 0o120000, data: "../../../../etc/passwd"}
	files["handbook/link.md"] = tfile{mode: 0o120000, data: "/etc/passwd"}
	files["records/huge.md"] = text("---\nid: huge\nkind: service\n---\n" + strings.Repeat("x", 4096))
	files["handbook/huge.md"] = text(strings.Repeat("needle\n", 1024))
	deep := "records"
	for range 40 {
		deep += "/d"
	}
	files[deep+"/deep.md"] = record("deep", "service")
	files["records/evil.md"] = text("---\nid: evil\nkind: service\nx: &a 1\n---\n")
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(files)}
	s := r.store(Options{Limits: Limits{MaxBlobBytes: 2048}})
	ctx := context.Background()
	ix, err := s.Index(ctx, pin)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Code{}
	for _, p := range ix.Problems(All()) {
		got[p.Path] = p.Code
	}
	want := map[string]Code{"records/link.md": CodeSymlink, "handbook/link.md": CodeSymlink, "records/huge.md": CodeBlobTooLarge, "records/evil.md": CodeAnchor}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("problem at %s = %q, want %q (all: %v)", p, got[p], c, got)
		}
	}
	foundDeep := false
	for p, c := range got {
		if c == CodeTreeTooDeep && strings.HasPrefix(p, "records/d/") {
			foundDeep = true
		}
	}
	if !foundDeep {
		t.Errorf("no tree_too_deep problem for the 40-level tree: %v", got)
	}
	if ix.Len() != 4 {
		t.Errorf("index holds %d records, want the 4 sound ones", ix.Len())
	}
	if _, err := s.ReadDoc(ctx, ix, "handbook/link.md", All()); !errors.Is(err, ErrUnsafeEntry) || CodeOf(err) != CodeSymlink {
		t.Errorf("ReadDoc of a symlink = %v, want ErrUnsafeEntry/symlink", err)
	}
	if _, err := s.ReadDoc(ctx, ix, "handbook/huge.md", All()); !errors.Is(err, ErrLimitExceeded) {
		t.Errorf("ReadDoc of a huge blob = %v, want ErrLimitExceeded", err)
	}
	g, err := s.Grep(ctx, ix, GrepQuery{Pattern: "needle"}, All())
	if err != nil || len(g.Matches) != 0 || len(g.Skipped) != 1 || g.Skipped[0].Code != CodeBlobTooLarge {
		t.Errorf("grep over a huge blob = %+v, %v; want it skipped with blob_too_large", g, err)
	}
	// Too many entries is a typed error, not a long walk.
	s2 := r.store(Options{Limits: Limits{MaxEntries: 5}})
	if _, err := s2.Index(ctx, pin); !errors.Is(err, ErrLimitExceeded) || CodeOf(err) != CodeTooManyEntries {
		t.Errorf("Index over the entry bound = %v, want too_many_entries", err)
	}
	// A cancelled context stops a build.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.store(Options{}).Index(cctx, pin); !errors.Is(err, context.Canceled) {
		t.Errorf("Index with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestResolveNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.commit(baseFiles())
	s := r.store(Options{})
	if _, err := s.Resolve("refs/heads/nope"); !errors.Is(err, ErrRef) || CodeOf(err) != CodeRefNotFound {
		t.Errorf("Resolve of a missing ref = %v, want ErrRef/ref_not_found", err)
	}
	if _, err := s.Resolve(strings.Repeat("a", 40)); !errors.Is(err, ErrRef) {
		t.Errorf("Resolve of an unknown commit ID = %v, want ErrRef", err)
	}
	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, ErrRepository) {
		t.Errorf("Open of a plain directory = %v, want ErrRepository", err)
	}
	if _, err := Open(r.dir, Options{GraphPaths: []string{"../x"}}); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("Open with a graph path leaving the repository = %v, want ErrInvalidArguments", err)
	}
}

func TestIndexIsBuiltOncePerCommitAndShared(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(baseFiles())}
	cache := NewCache(2)
	var wg sync.WaitGroup
	idx := make([]*Index, 8)
	for i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := r.store(Options{Cache: cache})
			ix, err := s.Index(context.Background(), pin)
			if err != nil {
				t.Error(err)
			}
			idx[i] = ix
		}()
	}
	wg.Wait()
	if cache.Builds() != 1 {
		t.Errorf("8 tasks on one commit built %d indexes, want 1", cache.Builds())
	}
	other := r.commit(baseFiles())
	if _, err := r.store(Options{Cache: cache}).Index(context.Background(), Pin{Ref: "x", Commit: other}); err != nil {
		t.Fatal(err)
	}
	if cache.Builds() != 2 {
		t.Errorf("a second commit built %d indexes in total, want 2", cache.Builds())
	}
}

func TestGrepPatternsAreBounded(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(baseFiles())}
	s := r.store(Options{})
	ix, _ := s.Index(context.Background(), pin)
	for _, q := range []GrepQuery{
		{Pattern: ""},
		{Pattern: strings.Repeat("a", MaxPatternBytes+1)},
		{Pattern: "(", Regexp: true},
		{Pattern: "(a{1,1000}){1,1000}", Regexp: true},
		{Pattern: "((((a{1,100}){1,100}){1,100}){1,100})", Regexp: true},
	} {
		if _, err := s.Grep(context.Background(), ix, q, All()); !errors.Is(err, ErrInvalidArguments) || CodeOf(err) != CodeBadPattern {
			t.Errorf("Grep %.40q = %v, want bad_pattern", q.Pattern, err)
		}
	}
	if g, _ := s.Grep(context.Background(), ix, GrepQuery{Pattern: `^Page the \w+`, Regexp: true}, All()); len(g.Matches) != 1 || g.Matches[0].Line != 2 {
		t.Fatalf("an anchored pattern matches at a line's start, not only the file's: %+v", g)
	}
	g, err := s.Grep(context.Background(), ix, GrepQuery{Pattern: `^#\s+\w+`, Regexp: true, Limit: 1}, All())
	if err != nil || len(g.Matches) != 1 || g.Matches[0].Path != "handbook/deploy.md" || g.NextCursor != 1 {
		t.Fatalf("regexp grep page 1 = %+v, %v", g, err)
	}
	g, _ = s.Grep(context.Background(), ix, GrepQuery{Pattern: `^#\s+\w+`, Regexp: true, Limit: 1, Cursor: 1}, All())
	if len(g.Matches) != 1 || g.Matches[0].Path != "handbook/oncall.md" || g.NextCursor != 0 {
		t.Fatalf("regexp grep page 2 = %+v", g)
	}
	g, _ = s.Grep(context.Background(), ix, GrepQuery{Pattern: "PAGE THE", IgnoreCase: true}, All())
	if len(g.Matches) != 1 {
		t.Fatalf("case-insensitive literal grep = %+v", g)
	}
}

func TestDiffSummarisesChangesInScope(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	from := Pin{Ref: "a", Commit: r.commit(baseFiles())}
	next := baseFiles()
	next[recPath("service", "billing")] = record("billing", "service", "owner: finance", "repo: acme/billing", "stack: go", "associations: [team-payments]", "edges:", "  depends_on: [ledger, vault]", "body:Billing charges customers. Version one.")
	delete(next, recPath("service", "ledger"))
	next[recPath("service", "invoices")] = record("invoices", "service", "owner: payments")
	next[recPath("secret", "vault")] = record("vault", "secret", "owner: nobody")
	next["handbook/deploy.md"] = text("# Deploy\nRun it twice.\n")
	next["elsewhere/ignored.md"] = text("changed\n")
	to := Pin{Ref: "b", Commit: r.commit(next)}
	s := r.store(Options{})
	scope := Scope{Kinds: []string{"service", "team"}, Paths: []string{"*"}}
	d, err := s.Diff(context.Background(), from, to, scope, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Changes {
		got = append(got, fmt.Sprintf("%s %s %s %v", c.Action, c.Path, c.ID, c.Fields))
	}
	want := []string{
		"modified handbook/deploy.md  []",
		"modified records/service/billing.md billing [owner]",
		"added records/service/invoices.md invoices []",
		"deleted records/service/ledger.md ledger []",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || d.Total != 4 {
		t.Fatalf("diff =\n%s\nwant\n%s\n(total %d; the hidden secret record must be neither listed nor counted)", strings.Join(got, "\n"), strings.Join(want, "\n"), d.Total)
	}
	// A diff of more changes than the entry bound is a typed error, not a
	// long summary.
	small := r.store(Options{Limits: Limits{MaxEntries: 2}})
	if _, err := small.Diff(context.Background(), from, to, scope, 0, 0); !errors.Is(err, ErrLimitExceeded) || CodeOf(err) != CodeTooManyEntries {
		t.Errorf("a diff over the entry bound = %v, want too_many_entries", err)
	}
	p2, _ := s.Diff(context.Background(), from, to, scope, 2, 2)
	if len(p2.Changes) != 2 || p2.Changes[0].ID != "invoices" || p2.NextCursor != 0 {
		t.Fatalf("diff page 2 = %+v", p2)
	}
}

func TestProposeWritesAPatchGitApplyAcceptsOnThePin(t *testing.T) {
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; the patch is checked by git itself")
	}
	r := newTestRepo(t)
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(baseFiles())}
	s := r.store(Options{})
	ix, _ := s.Index(context.Background(), pin)
	p := Proposal{
		Subject: "memory: add invoices, retire ledger",
		Date:    time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC),
		Changes: []ProposedChange{
			{Op: "add", Record: Record{ID: "invoices", Kind: "service", Owner: "payments", Edges: []Edge{{"depends_on", "billing"}}, Body: "Invoices.\n"}},
			{Op: "edit", Record: Record{ID: "billing", Kind: "service", Owner: "finance", Repo: "acme/billing", Body: "Billing, edited.\n"}},
			{Op: "delete", Record: Record{ID: "ledger"}},
		},
	}
	applies := func(patch []byte) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "p.patch")
		if err := os.WriteFile(file, patch, 0o600); err != nil {
			t.Fatal(err)
		}
		index := filepath.Join(t.TempDir(), "index")
		run := func(args ...string) {
			t.Helper()
			cmd := exec.Command(gitBin, append([]string{"--git-dir", r.dir}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s\npatch:\n%s", args, err, out, patch)
			}
		}
		run("read-tree", pin.Commit)
		run("apply", "--check", "--cached", file)
	}
	// Every record the proposal touches is whole in the proposer's
	// scope: the patch applies on the pin as it is.
	patch, err := s.Propose(ix, p, All())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(patch.Text), "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n") || !strings.HasPrefix(patch.SHA256, "sha256:") {
		t.Fatalf("patch is not format-patch shaped:\n%s", patch.Text)
	}
	again, _ := s.Propose(ix, p, All())
	if again.SHA256 != patch.SHA256 {
		t.Errorf("the same proposal gave two digests: the patch must be deterministic")
	}
	applies(patch.Text)

	// billing depends on vault, a secret the service grant hides: the
	// proposer's patch is against billing as it sees it, and the
	// reviewer's patch (Review) applies on the pin, keeping the edge.
	narrow, err := s.Propose(ix, p, Scope{Kinds: []string{"service"}, Paths: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(narrow.Text), "vault") {
		t.Errorf("the proposer's patch names a hidden record:\n%s", narrow.Text)
	}
	rv, err := s.Review(ix, nil, narrow.Text, Scope{Kinds: []string{"service"}, Paths: []string{"*"}})
	if err != nil || rv.Patch == nil {
		t.Fatalf("Review = %+v, %v", rv, err)
	}
	if !strings.Contains(string(rv.Patch.Text), "vault") {
		t.Errorf("the reviewed patch dropped billing's edge to vault:\n%s", rv.Patch.Text)
	}
	applies(rv.Patch.Text)

	// Never a write to the memory repository.
	now, _ := s.Resolve("refs/heads/main")
	if now.Commit != pin.Commit {
		t.Errorf("propose moved the ref")
	}
	// Kinds outside the grant are refused.
	if _, err := s.Propose(ix, Proposal{Subject: "x", Changes: []ProposedChange{{Op: "add", Record: Record{ID: "k", Kind: "secret"}}}}, Scope{Kinds: []string{"service"}, Paths: []string{"*"}}); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("proposing a kind outside the grant = %v, want ErrInvalidArguments", err)
	}
	if _, err := s.Propose(ix, Proposal{Subject: "x", Changes: []ProposedChange{{Op: "delete", Record: Record{ID: "vault"}}}}, Scope{Kinds: []string{"service"}, Paths: []string{"*"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting a hidden record = %v, want ErrNotFound", err)
	}
}

const testOntology = `
[kinds.service]
required = ["owner", "repo"]
[kinds.team]
required = ["owner"]
[kinds.secret]

[edges.depends_on]
from = ["service"]
to = ["service", "secret"]
[edges.owned_by]
from = ["service"]
to = ["team"]
`

func TestValidateCatchesEachOntologyViolation(t *testing.T) {
	t.Parallel()
	o, err := ParseOntology("ontology.toml", []byte(testOntology))
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRepo(t)
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(baseFiles())}
	s := r.store(Options{})
	ix, _ := s.Index(context.Background(), pin)
	svc := func(id string, edges ...Edge) Record {
		return Record{ID: id, Kind: "service", Owner: "o", Repo: "r", Edges: edges}
	}
	cases := []struct {
		name   string
		change []ProposedChange
		code   string
	}{
		{"valid", []ProposedChange{{Op: "add", Record: svc("new", Edge{"depends_on", "ledger"})}}, ""},
		{"unknown kind", []ProposedChange{{Op: "add", Record: Record{ID: "n", Kind: "gadget"}}}, ViolationUnknownKind},
		{"missing field", []ProposedChange{{Op: "add", Record: Record{ID: "n", Kind: "service", Owner: "o"}}}, ViolationMissingField},
		{"unknown edge kind", []ProposedChange{{Op: "add", Record: svc("n", Edge{"likes", "ledger"})}}, ViolationUnknownEdgeKind},
		{"edge to the wrong kind", []ProposedChange{{Op: "add", Record: svc("n", Edge{"owned_by", "ledger"})}}, ViolationEdgeEndpoint},
		{"dangling edge", []ProposedChange{{Op: "add", Record: svc("n", Edge{"depends_on", "nowhere"})}}, ViolationDanglingEdge},
		{"dangling association", []ProposedChange{{Op: "add", Record: Record{ID: "n", Kind: "team", Owner: "o", Associations: []string{"nowhere"}}}}, ViolationDanglingEdge},
		{"delete leaves an edge dangling", []ProposedChange{{Op: "delete", Record: Record{ID: "ledger"}}}, ViolationDanglingEdge},
		{"id collision with the pin", []ProposedChange{{Op: "add", Record: svc("ledger")}}, ViolationIDCollision},
		{"id collision in the proposal", []ProposedChange{{Op: "add", Record: svc("n")}, {Op: "add", Record: svc("n")}}, ViolationIDCollision},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := o.Validate(ix, Proposal{Changes: c.change}, All())
			if c.code == "" {
				if len(vs) != 0 {
					t.Fatalf("violations of a valid proposal: %+v", vs)
				}
				return
			}
			if len(vs) != 1 || vs[0].Code != c.code {
				t.Fatalf("violations = %+v, want exactly one %s", vs, c.code)
			}
		})
	}
	// A hidden record is never named by a violation.
	vs := o.Validate(ix, Proposal{Changes: []ProposedChange{{Op: "add", Record: svc("n", Edge{"depends_on", "vault"})}}}, Scope{Kinds: []string{"service"}, Paths: []string{"*"}})
	for _, v := range vs {
		if strings.Contains(v.Reason, "secret") {
			t.Errorf("violation names a hidden record's kind: %+v", v)
		}
	}
}

func TestOntologyLoadsStrictly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text string }{
		{"unknown key", "[kinds.a]\nrequried = [\"x\"]\n"},
		{"no kinds", "[edges.e]\n"},
		{"edge to an undeclared kind", "[kinds.a]\n[edges.e]\nto = [\"b\"]\n"},
		{"syntax", "[kinds.a\n"},
	} {
		if _, err := ParseOntology("ontology.toml", []byte(c.text)); !errors.Is(err, ErrInvalidOntology) {
			t.Errorf("%s: ParseOntology = %v, want ErrInvalidOntology", c.name, err)
		}
	}
	_, err := ParseOntology("ontology.toml", []byte("[kinds.a]\nrequried = [\"x\"]\n"))
	if e := (*Error)(nil); !errors.As(err, &e) || e.Line != 2 {
		t.Errorf("unknown key error = %v, want it at line 2", err)
	}
}

func TestAProposedPatchValidatesLikeItsChanges(t *testing.T) {
	t.Parallel()
	o, err := ParseOntology("ontology.toml", []byte(testOntology))
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRepo(t)
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(baseFiles())}
	s := r.store(Options{})
	ix, _ := s.Index(context.Background(), pin)
	p := Proposal{Subject: "x", Changes: []ProposedChange{
		{Op: "add", Record: Record{ID: "invoices", Kind: "service", Owner: "o", Edges: []Edge{{"depends_on", "nowhere"}}, Body: "Invoices.\n"}},
		{Op: "edit", Record: Record{ID: "billing", Kind: "service", Owner: "finance", Repo: "acme/billing", Body: "Billing, edited.\n"}},
		{Op: "delete", Record: Record{ID: "ledger"}},
	}}
	patch, err := s.Propose(ix, p, All())
	if err != nil {
		t.Fatal(err)
	}
	changes, err := s.ChangesFromPatch(ix, patch.Text, All())
	if err != nil {
		t.Fatalf("ChangesFromPatch of Propose's own patch: %v\n%s", err, patch.Text)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Op+" "+c.Record.ID+" "+c.Record.Owner)
	}
	want := "add invoices o|edit billing finance|delete ledger "
	if strings.Join(got, "|") != want {
		t.Fatalf("changes from the patch = %q, want %q", strings.Join(got, "|"), want)
	}
	fromPatch := o.Validate(ix, Proposal{Changes: changes}, All())
	direct := o.Validate(ix, p, All())
	codes := func(vs []Violation) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Code+" "+v.ID+" "+v.Field)
		}
		return strings.Join(out, "|")
	}
	if codes(fromPatch) != codes(direct) || len(direct) == 0 {
		t.Errorf("violations from the patch %v differ from the changes' %v", fromPatch, direct)
	}
	// A patch that does not apply at the pin says where.
	broken := strings.Replace(string(patch.Text), "-The ledger.", "-The ledger, changed.", 1)
	if _, err := s.ChangesFromPatch(ix, []byte(broken), All()); !errors.Is(err, ErrInvalidArguments) || CodeOf(err) != CodeBadProposal {
		t.Errorf("a patch that does not apply = %v, want bad_proposal", err)
	}
	// A patch of a record outside scope finds nothing.
	if _, err := s.ChangesFromPatch(ix, patch.Text, Scope{Kinds: []string{"team"}, Paths: []string{"*"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a patch over records outside scope = %v, want ErrNotFound", err)
	}
}
