package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/clock"
)

// The proposer's grants in these tests: services and teams, every path.
// Secrets are hidden from it.
var proposerScope = Scope{Kinds: []string{"service", "team"}, Paths: []string{"*"}}

// proposerCall runs one memory tool call (propose or validate, granted
// proposerScope) on a repository of files, and returns all the caller can
// observe of it as one string: the payload or the error (its type, code
// and text), and the bytes of a patch written to the workspace. The pinned
// commit, and the digests of a patch that names it, are replaced by
// placeholders: two repositories that differ in a hidden record differ in
// their commit IDs, and nothing else may differ.
func proposerCall(t *testing.T, files map[string]tfile, tool string, args string) string {
	t.Helper()
	o, err := ParseOntology("ontology.toml", []byte(testOntology))
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRepo(t)
	commit := r.commit(files)
	s := r.store(Options{})
	written := map[string][]byte{}
	grant := Grant{Scope: proposerScope}
	tools, err := OpenTools(context.Background(), ToolsOptions{Store: s, Ref: "refs/heads/main", Ontology: o,
		Grants: map[string]Grant{ToolPropose: grant, ToolValidate: grant},
		WritePatch: func(name string, data []byte) (string, error) {
			written["memory-proposals/"+name] = data
			return "memory-proposals/" + name, nil
		},
		ReadPatch: func(p string) ([]byte, error) {
			if b, ok := written[p]; ok {
				return b, nil
			}
			return nil, errors.New("no such file")
		},
		Clock: clock.NewManual(time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	payload, err := tools.Call(context.Background(), tool, json.RawMessage(args))
	if err != nil {
		var me *Error
		var ae *ArgumentError
		switch {
		case errors.As(err, &me):
			fmt.Fprintf(&out, "error %T code=%s kind=%v path=%s line=%d: %s\n", me, me.Code, me.Kind, me.Path, me.Line, me.Reason)
		case errors.As(err, &ae):
			fmt.Fprintf(&out, "error %T: %s\n", ae, ae.Reason)
		default:
			fmt.Fprintf(&out, "error %T: %v\n", err, err)
		}
	} else {
		b, _ := json.Marshal(payload)
		out.Write(b)
		out.WriteByte('\n')
	}
	for _, name := range sortedKeys(written) {
		fmt.Fprintf(&out, "file %s:\n%s", name, written[name])
	}
	text := out.String()
	if m, ok := payload.(map[string]any); ok {
		if sum, ok := m["revision"].(string); ok {
			text = strings.ReplaceAll(text, sum, "<sha256>")
			text = strings.ReplaceAll(text, sum[:16], "<sha256-16>")
		}
	}
	return strings.ReplaceAll(text, commit, "<pin>")
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// with returns base plus files.
func with(base map[string]tfile, files map[string]tfile) map[string]tfile {
	out := maps.Clone(base)
	maps.Copy(out, files)
	return out
}

// visibleFiles is baseFiles without its secret and billing's edge to it,
// with ads, a service nothing refers to: the repository as the proposer
// sees it. billing keeps its own formatting (flow lists, not what Render
// writes): only the hidden edge is cut from its text, so that a tool
// that showed a record's blob when it names no hidden record, and the
// record rendered when it does, would tell the two repositories apart.
func visibleFiles(t *testing.T) map[string]tfile {
	t.Helper()
	files := baseFiles()
	delete(files, recPath("secret", "vault"))
	billing := files[recPath("service", "billing")].data
	cut := strings.Replace(billing, "[ledger, vault]", "[ledger]", 1)
	if cut == billing {
		t.Fatal("billing's edge to vault is not where the test cuts it")
	}
	if b, err := Render(mustParse(t, recPath("service", "billing"), cut)); err != nil || string(b) == cut {
		t.Fatalf("billing must not be written as Render writes it: %v", err)
	}
	files[recPath("service", "billing")] = text(cut)
	files[recPath("service", "ads")] = record("ads", "service", "owner: o", "repo: r")
	return files
}

func mustParse(t *testing.T, path, data string) *Record {
	t.Helper()
	r, err := ParseRecord(path, []byte(data), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAProposalCannotTellAHiddenRecordFromNoRecord defends the rule that
// memory.update.propose and memory.ontology.validate are no oracle for
// records their grant hides: for each way a hidden record could show
// through (a path it holds, an ID it uses, an edge from it, an edge to
// it), the caller's whole answer (payload, error type, code and text,
// violations and their count, the patch written to the workspace) is the
// same byte for byte whether the hidden record exists or not.
func TestAProposalCannotTellAHiddenRecordFromNoRecord(t *testing.T) {
	t.Parallel()
	secret := func(id string, lines ...string) tfile { return record(id, "secret", lines...) }
	cases := []struct {
		name   string
		hidden map[string]tfile // added to the visible repository
		tool   string
		args   string
	}{
		{"an add at a path a hidden record holds", map[string]tfile{"records/service/invoices.md": secret("keys")}, ToolPropose,
			`{"subject":"add invoices","changes":[{"op":"add","record":{"id":"invoices","kind":"service","owner":"o","repo":"r","path":"records/service/invoices.md"}}]}`},
		{"an add at the default path a hidden record holds", map[string]tfile{"records/service/invoices.md": secret("keys")}, ToolPropose,
			`{"subject":"add invoices","changes":[{"op":"add","record":{"id":"invoices","kind":"service","owner":"o","repo":"r"}}]}`},
		{"an add with the ID of a hidden record", map[string]tfile{recPath("secret", "invoices"): secret("invoices")}, ToolPropose,
			`{"subject":"add invoices","changes":[{"op":"add","record":{"id":"invoices","kind":"service","owner":"o","repo":"r"}}]}`},
		{"validating an add with the ID of a hidden record", map[string]tfile{recPath("secret", "invoices"): secret("invoices")}, ToolValidate,
			`{"changes":[{"op":"add","record":{"id":"invoices","kind":"service","owner":"o","repo":"r"}}]}`},
		{"validating an add with an edge to a hidden record", map[string]tfile{recPath("secret", "vault"): secret("vault")}, ToolValidate,
			`{"changes":[{"op":"add","record":{"id":"invoices","kind":"service","owner":"o","repo":"r","edges":[{"kind":"depends_on","to":"vault"}]}}]}`},
		{"a delete of a record a hidden record refers to", map[string]tfile{recPath("secret", "vault"): secret("vault", "edges:", "  depends_on: [ads]")}, ToolPropose,
			`{"subject":"retire ads","changes":[{"op":"delete","record":{"id":"ads"}}]}`},
		{"validating a delete of a record a hidden record refers to", map[string]tfile{recPath("secret", "vault"): secret("vault", "associations: [ads]")}, ToolValidate,
			`{"changes":[{"op":"delete","record":{"id":"ads"}}]}`},
		{"an edit of a record with an edge to a hidden record", map[string]tfile{
			recPath("secret", "vault"):    secret("vault"),
			recPath("service", "billing"): baseFiles()[recPath("service", "billing")], // depends_on: [ledger, vault]
		}, ToolPropose,
			`{"subject":"billing moves","changes":[{"op":"edit","record":{"id":"billing","kind":"service","owner":"finance","repo":"acme/billing"}}]}`},
		{"a delete of a record with an edge to a hidden record", map[string]tfile{
			recPath("secret", "vault"):    secret("vault"),
			recPath("service", "billing"): baseFiles()[recPath("service", "billing")],
		}, ToolPropose,
			`{"subject":"retire billing","changes":[{"op":"delete","record":{"id":"billing"}}]}`},
		{"validating a delete of a hidden record a visible one refers to", map[string]tfile{
			recPath("secret", "vault"):    secret("vault"),
			recPath("service", "billing"): baseFiles()[recPath("service", "billing")],
		}, ToolValidate,
			`{"changes":[{"op":"delete","record":{"id":"vault"}}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			absent := proposerCall(t, visibleFiles(t), c.tool, c.args)
			present := proposerCall(t, with(visibleFiles(t), c.hidden), c.tool, c.args)
			if absent != present {
				t.Errorf("the answer tells a hidden record from none.\nwithout it:\n%s\nwith it:\n%s", absent, present)
			}
			for _, word := range []string{"secret", "keys", "vault"} {
				if strings.Contains(present, word) && !strings.Contains(c.args, word) {
					t.Errorf("the answer names %q, which only a hidden record holds:\n%s", word, present)
				}
			}
		})
	}
}

// TestAProposedPatchValidatesTheSameWhetherAHiddenRecordHoldsItsPath
// defends the rule for a patch handed to validate: a patch adding a
// record where a hidden one lies reads the same as where nothing lies.
func TestAProposedPatchValidatesTheSameWhetherAHiddenRecordHoldsItsPath(t *testing.T) {
	t.Parallel()
	propose := `{"subject":"add invoices","changes":[{"op":"add","record":{"id":"invoices","kind":"service","owner":"o","repo":"r"}}]}`
	hidden := map[string]tfile{"records/service/invoices.md": record("keys", "secret")}
	for _, files := range []map[string]tfile{visibleFiles(t), with(visibleFiles(t), hidden)} {
		// The patch file's name is its digest's prefix, the same in both.
		out := proposerCall(t, files, ToolPropose, propose)
		if strings.Contains(out, "error") {
			t.Fatalf("propose = %s", out)
		}
	}
	validate := func(files map[string]tfile) string {
		o, _ := ParseOntology("ontology.toml", []byte(testOntology))
		r := newTestRepo(t)
		commit := r.commit(files)
		s := r.store(Options{})
		ix, _ := s.Index(context.Background(), Pin{Ref: "refs/heads/main", Commit: commit})
		patch, err := s.Propose(ix, Proposal{Subject: "add invoices", Changes: []ProposedChange{{Op: "add", Record: Record{ID: "invoices", Kind: "service", Owner: "o", Repo: "r"}}}}, proposerScope)
		if err != nil {
			return fmt.Sprintf("propose: %v", err)
		}
		changes, err := s.ChangesFromPatch(ix, patch.Text, proposerScope)
		if err != nil {
			return fmt.Sprintf("changes: %v", err)
		}
		b, _ := json.Marshal(o.Validate(ix, Proposal{Changes: changes}, proposerScope))
		return strings.ReplaceAll(string(patch.Text), commit, "<pin>") + string(b)
	}
	if a, b := validate(visibleFiles(t)), validate(with(visibleFiles(t), hidden)); a != b {
		t.Errorf("validating the patch tells a hidden record from none:\n%s\n---\n%s", a, b)
	}
}

// TestReviewerLearnsEachConflictTheProposerCannot defends the other half
// of the rule: what the proposer is not told, the reviewer with full
// scope is — a path or an ID a hidden record holds, and edges a deletion
// leaves dangling from a hidden record.
func TestReviewerLearnsEachConflictTheProposerCannot(t *testing.T) {
	t.Parallel()
	o, err := ParseOntology("ontology.toml", []byte(testOntology))
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRepo(t)
	files := with(visibleFiles(t), map[string]tfile{
		"records/service/invoices.md": record("keys", "secret"),
		recPath("secret", "payroll"):  record("payroll", "secret"),
		recPath("secret", "vault"):    record("vault", "secret", "edges:", "  depends_on: [ads]"),
	})
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(files)}
	s := r.store(Options{})
	ix, _ := s.Index(context.Background(), pin)
	cases := []struct {
		name   string
		change ProposedChange
		code   string
		patch  bool
	}{
		{"a path a hidden record holds", ProposedChange{Op: "add", Record: Record{ID: "invoices", Kind: "service", Owner: "o", Repo: "r"}}, ViolationPathTaken, false},
		{"an ID a hidden record uses", ProposedChange{Op: "add", Record: Record{ID: "payroll", Kind: "service", Owner: "o", Repo: "r"}}, ViolationIDCollision, true},
		{"a deletion a hidden record refers to", ProposedChange{Op: "delete", Record: Record{ID: "ads"}}, ViolationDanglingEdge, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Proposal{Subject: c.name, Changes: []ProposedChange{c.change}}
			patch, err := s.Propose(ix, p, proposerScope)
			if err != nil {
				t.Fatalf("the proposer is refused: %v", err)
			}
			if vs := o.Validate(ix, p, proposerScope); len(vs) != 0 {
				t.Fatalf("the proposer is told %+v", vs)
			}
			rv, err := s.Review(ix, o, patch.Text, proposerScope)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range rv.Conflicts {
				found = found || v.Code == c.code
			}
			if !found {
				t.Errorf("the reviewer's conflicts %+v lack %s", rv.Conflicts, c.code)
			}
			if (rv.Patch != nil) != c.patch {
				t.Errorf("reviewed patch = %v, want one: %v", rv.Patch != nil, c.patch)
			}
		})
	}
}

// TestAGrantWithinAChildScopeIsNeverWider defends the rule a child's
// memory scope relies on: a grant cut down to a bound allows no kind or
// path the grant did not, and only what the bound allows.
func TestAGrantWithinAChildScopeIsNeverWider(t *testing.T) {
	t.Parallel()
	grant := Scope{Kinds: []string{"service", "team"}, Paths: []string{"records/services/", "handbook"}}
	cases := []struct {
		bound Scope
		want  Scope
	}{
		{All(), Scope{Kinds: []string{"service", "team"}, Paths: []string{"handbook", "records/services/"}}},
		{Scope{Kinds: []string{"team", "secret"}, Paths: []string{"*"}}, Scope{Kinds: []string{"team"}, Paths: []string{"handbook", "records/services/"}}},
		{Scope{Kinds: []string{"*"}, Paths: []string{"records/"}}, Scope{Kinds: []string{"service", "team"}, Paths: []string{"records/services/"}}},
		{Scope{Kinds: []string{"*"}, Paths: []string{"records/services/billing.md", "handbook/oncall.md", "records/services-secret/"}}, Scope{Kinds: []string{"service", "team"}, Paths: []string{"handbook/oncall.md", "records/services/billing.md"}}},
		{Scope{Kinds: []string{}, Paths: []string{}}, Scope{Kinds: []string{}, Paths: []string{}}},
	}
	for _, c := range cases {
		got := grant.Within(c.bound)
		if !slices.Equal(got.Kinds, c.want.Kinds) || !slices.Equal(got.Paths, c.want.Paths) {
			t.Errorf("%+v within %+v = %+v, want %+v", grant, c.bound, got, c.want)
		}
		for _, p := range []string{"records/services/billing.md", "records/secrets/k.md", "records/services-secret/x.md", "handbook/oncall.md", "handbook", "elsewhere/x.md"} {
			if got.AllowsPath(p) && (!grant.AllowsPath(p) || !c.bound.AllowsPath(p)) {
				t.Errorf("%+v within %+v allows %s", grant, c.bound, p)
			}
		}
	}
}

// TestGrepAndDocReadNeverShowAHiddenEdgeOfARecord defends the rule that a
// record under a docs path (docs_paths overlapping graph_paths) is read
// and grepped as the grant sees it: its edge to a hidden record is not in
// its lines, as it is not in memory.record.read's answer.
func TestGrepAndDocReadNeverShowAHiddenEdgeOfARecord(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	pin := Pin{Ref: "refs/heads/main", Commit: r.commit(baseFiles())}
	s := r.store(Options{DocsPaths: []string{"records/", "handbook/"}})
	ix, err := s.Index(context.Background(), pin)
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope{Kinds: []string{"service", "team"}, Paths: []string{"*"}}
	page, err := s.Grep(context.Background(), ix, GrepQuery{Pattern: "depends_on"}, scope)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(page)
	if !strings.Contains(string(b), "records/service/billing.md") || strings.Contains(string(b), "vault") {
		t.Errorf("grep of billing's edges = %s; want its line, without vault", b)
	}
	if page, _ := s.Grep(context.Background(), ix, GrepQuery{Pattern: "vault"}, scope); len(page.Matches) != 0 {
		t.Errorf("grep for a hidden record's ID matched %+v", page.Matches)
	}
	doc, err := s.ReadDoc(context.Background(), ix, "records/service/billing.md", scope)
	if err != nil || strings.Contains(doc.Text, "vault") || !strings.Contains(doc.Text, "ledger") {
		t.Errorf("ReadDoc of billing = %q, %v; want it without vault", doc.Text, err)
	}
	// With the whole graph in scope, the file is its blob.
	if doc, _ := s.ReadDoc(context.Background(), ix, "records/service/billing.md", All()); !strings.Contains(doc.Text, "[ledger, vault]") {
		t.Errorf("ReadDoc at full scope = %q, want the blob", doc.Text)
	}
}

// TestEveryToolAnswersAlikeWithOrWithoutAHiddenRecord defends the rule
// for all six tools at once: two repositories that differ only in hidden
// records (a secret, billing's edge and association to it, and, at the
// newer commit, another secret and billing's edges to both) give the
// grant that hides them byte-identical answers to every call, commit IDs
// aside. billing keeps its own formatting on both sides, so a tool that
// re-rendered only a record with a hidden edge would show it.
func TestEveryToolAnswersAlikeWithOrWithoutAHiddenRecord(t *testing.T) {
	t.Parallel()
	const billing = "---\nid: billing\nkind: service\nowner:   payments   # the team\nrepo: 'acme/billing'\nassociations: [team-payments%s]\nedges: {depends_on: [ledger%s]}\n---\nBilling charges customers.\n%s"
	repo := func(hidden bool) (string, map[string]tfile, map[string]tfile) {
		h := func(s string) string {
			if hidden {
				return s
			}
			return ""
		}
		first := map[string]tfile{
			recPath("service", "billing"): text(fmt.Sprintf(billing, h(", vault"), h(", vault"), "")),
			recPath("service", "ledger"):  record("ledger", "service", "owner: payments", "repo: acme/ledger", "body:The ledger."),
			recPath("team", "payments"):   record("team-payments", "team", "owner: payments"),
			"handbook/oncall.md":          text("# On call\nPage the payments team.\n"),
		}
		next := maps.Clone(first)
		next[recPath("service", "billing")] = text(fmt.Sprintf(billing, h(", vault"), h(", vault, hsm"), "Version two.\n"))
		next["handbook/oncall.md"] = text("# On call\nPage billing.\n")
		if hidden {
			first[recPath("secret", "vault")] = record("vault", "secret", "owner: security", "edges:", "  depends_on: [billing]", "body:Where the keys live.")
			next[recPath("secret", "vault")] = record("vault", "secret", "owner: security", "edges:", "  depends_on: [billing, ledger]", "body:Where the keys live now.")
			next[recPath("secret", "hsm")] = record("hsm", "secret", "owner: security", "associations: [billing]")
		}
		return h("x"), first, next
	}
	calls := []struct{ tool, args string }{
		{ToolSearch, `{}`},
		{ToolSearch, `{"text":"billing"}`},
		{ToolSearch, `{"edge_kind":"depends_on"}`},
		{ToolSearch, `{"edge_to":"vault"}`},
		{ToolSearch, `{"association":"vault"}`},
		{ToolSearch, `{"kind":"secret"}`},
		{ToolRead, `{"id":"billing"}`},
		{ToolRead, `{"path":"records/service/billing.md"}`},
		{ToolRead, `{"id":"vault"}`},
		{ToolRead, `{"path":"records/secret/vault.md"}`},
		{ToolGrep, `{"pattern":".","regexp":true}`},
		{ToolGrep, `{"pattern":"vault|hsm|security","regexp":true}`},
		{ToolGrep, `{"pattern":"depends_on"}`},
		{ToolDiff, `{"against":"current"}`},
		{ToolPropose, `{"subject":"billing moves","changes":[{"op":"edit","record":{"id":"billing","kind":"service","owner":"finance","repo":"acme/billing","edges":[{"kind":"depends_on","to":"ledger"}]}}]}`},
		{ToolValidate, `{"patch":"memory-proposals/<last>"}`},
		{ToolPropose, `{"subject":"retire billing","changes":[{"op":"delete","record":{"id":"billing"}}]}`},
		{ToolValidate, `{"patch":"memory-proposals/<last>"}`},
		{ToolValidate, `{"changes":[{"op":"delete","record":{"id":"ledger"}}]}`},
		{ToolPropose, `{"subject":"add vault","changes":[{"op":"add","record":{"id":"vault","kind":"service","owner":"o","repo":"r"}}]}`},
	}
	transcript := func(hidden bool) string {
		_, first, next := repo(hidden)
		o, err := ParseOntology("ontology.toml", []byte(testOntology))
		if err != nil {
			t.Fatal(err)
		}
		r := newTestRepo(t)
		pin := Pin{Ref: "refs/heads/main", Commit: r.commit(first)}
		current := r.commit(next)
		s := r.store(Options{DocsPaths: []string{"records/", "handbook/"}})
		written := map[string][]byte{}
		var order []string // the patches in the order they were written
		last := ""
		grant := Grant{Scope: proposerScope, Refresh: true}
		grants := map[string]Grant{}
		for _, id := range []string{ToolSearch, ToolRead, ToolGrep, ToolDiff, ToolPropose, ToolValidate} {
			grants[id] = grant
		}
		tools, err := OpenTools(context.Background(), ToolsOptions{Store: s, Ref: "refs/heads/main", Pin: &pin, Ontology: o, Grants: grants,
			WritePatch: func(name string, data []byte) (string, error) {
				last = name
				order = append(order, "memory-proposals/"+name)
				written["memory-proposals/"+name] = data
				return "memory-proposals/" + name, nil
			},
			ReadPatch: func(p string) ([]byte, error) {
				if b, ok := written[p]; ok {
					return b, nil
				}
				return nil, errors.New("no such file")
			},
			Clock: clock.NewManual(time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)),
		})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		var sums []string
		for _, c := range calls {
			args := strings.ReplaceAll(c.args, "<last>", last)
			fmt.Fprintf(&out, "%s %s\n", c.tool, c.args)
			payload, err := tools.Call(context.Background(), c.tool, json.RawMessage(args))
			if err != nil {
				var me *Error
				if errors.As(err, &me) {
					fmt.Fprintf(&out, "error code=%s kind=%v path=%s line=%d: %s\n", me.Code, me.Kind, me.Path, me.Line, me.Reason)
				} else {
					fmt.Fprintf(&out, "error %T: %v\n", err, err)
				}
				continue
			}
			b, _ := json.Marshal(payload)
			fmt.Fprintf(&out, "%s\n", b)
			if m, ok := payload.(map[string]any); ok {
				if sum, ok := m["revision"].(string); ok {
					sums = append(sums, sum) // a patch's digest covers the pin's ID
				}
			}
		}
		for _, name := range order {
			fmt.Fprintf(&out, "file %s:\n%s", name, written[name])
		}
		text := out.String()
		for i, sum := range sums {
			text = strings.ReplaceAll(text, sum, fmt.Sprintf("<sha256 %d>", i))
			text = strings.ReplaceAll(text, sum[:16], fmt.Sprintf("<sha256-16 %d>", i))
		}
		for _, c := range []string{pin.Commit, current} {
			text = strings.ReplaceAll(text, c, "<commit>")
			text = strings.ReplaceAll(text, c[:12], "<commit>")
		}
		return text
	}
	absent, present := transcript(false), transcript(true)
	if absent != present {
		a, p := strings.Split(absent, "\n"), strings.Split(present, "\n")
		for i := range min(len(a), len(p)) {
			if a[i] != p[i] {
				t.Fatalf("the answers tell hidden records from none, first at line %d:\nwithout: %s\nwith:    %s\n\nwhole answer with them:\n%s", i+1, a[i], p[i], present)
			}
		}
		t.Fatalf("the answers tell hidden records from none:\nwithout:\n%s\nwith:\n%s", absent, present)
	}
	for _, word := range []string{"secret", "security", "hsm", "keys"} {
		if strings.Contains(present, word) && !strings.Contains(strings.Join([]string{calls[3].args, calls[4].args, calls[5].args, calls[9].args, calls[11].args}, ""), word) {
			t.Errorf("the answers name %q, which only a hidden record holds", word)
		}
	}
	// The answers are answers: each tool found what it should.
	for _, want := range []string{`"id":"billing"`, `"body":true`, `"action":"modified"`, `"base":"<commit>"`, `"valid":true`, `"valid":false`, "-owner: payments"} {
		if !strings.Contains(present, want) {
			t.Errorf("the answers lack %q:\n%s", want, present)
		}
	}
}
