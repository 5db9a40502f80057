package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pabloagent/pablo/internal/memory"
)

// memoryReviewFixture is a memory repository whose billing record depends
// on a secret, a deployment whose propose_update grant hides the secret
// kind, and two patches written as memory.update.propose writes them
// under that grant: clean edits billing (its edge to the secret unseen),
// colliding adds a service with the secret's ID.
type memoryReviewFixture struct {
	mem, cfg, ws, commit string
	clean, colliding     string
	// narrowed edits billing under a child's scope of billing's file
	// alone, which hides ledger too.
	narrowed string
}

func newMemoryReviewFixture(t *testing.T) memoryReviewFixture {
	t.Helper()
	dir := t.TempDir()
	f := memoryReviewFixture{mem: filepath.Join(dir, "memory")}
	repo, err := git.PlainInit(f.mem, false)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"records/service/billing.md": "---\nid: billing\nkind: service\nowner: payments\nedges:\n  depends_on: [vault, ledger]\n---\nBilling.\n",
		"records/service/ledger.md":  "---\nid: ledger\nkind: service\n---\nLedger.\n",
		"records/secret/vault.md":    "---\nid: vault\nkind: secret\n---\nKeys.\n",
	}
	wt, _ := repo.Worktree()
	for p, text := range files {
		os.MkdirAll(filepath.Join(f.mem, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(f.mem, p), []byte(text), 0o644)
		wt.Add(p)
	}
	sig := &object.Signature{Name: "t", Email: "t@invalid", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h, err := wt.Commit("one", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	f.commit = h.String()
	f.cfg, f.ws = writeConfig(t, chatModel+`[options.memory]
repository = { base = "binding", name = "memory", path = "." }
ref = "refs/heads/master"
graph_paths = ["records/"]
[options.memory.grants.propose_update]
kinds = ["service"]
paths = ["records/service/"]
`)
	s, err := memory.Open(f.mem, memory.Options{GraphPaths: []string{"records/"}})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := s.Index(context.Background(), memory.Pin{Ref: "refs/heads/master", Commit: f.commit})
	if err != nil {
		t.Fatal(err)
	}
	scope := memory.Scope{Kinds: []string{"service"}, Paths: []string{"records/service/"}}
	write := func(name string, changes ...memory.ProposedChange) string {
		return proposeFile(t, s, ix, scope, dir, name, changes...)
	}
	f.clean = write("billing-moves", memory.ProposedChange{Op: "edit", Record: memory.Record{ID: "billing", Kind: "service", Owner: "finance", Edges: []memory.Edge{{Kind: "depends_on", To: "ledger"}}, Body: "Billing.\n"}})
	f.colliding = write("add-vault", memory.ProposedChange{Op: "add", Record: memory.Record{ID: "vault", Kind: "service", Owner: "finance"}})
	child := memory.Scope{Kinds: []string{"service"}, Paths: []string{"records/service/billing.md"}}
	f.narrowed = proposeFile(t, s, ix, child, dir, "child-billing", memory.ProposedChange{Op: "edit", Record: memory.Record{ID: "billing", Kind: "service", Owner: "finance", Body: "Billing.\n"}})
	return f
}

// proposeFile writes the patch memory.update.propose writes under scope.
func proposeFile(t *testing.T, s *memory.Store, ix *memory.Index, scope memory.Scope, dir, name string, changes ...memory.ProposedChange) string {
	t.Helper()
	p, err := s.Propose(ix, memory.Proposal{Subject: name, Changes: changes, Date: time.Unix(0, 0)}, scope)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".patch")
	if err := os.WriteFile(path, p.Text, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (f memoryReviewFixture) args(extra ...string) []string {
	return append([]string{"memory", "review", "--config", f.cfg, "--bind", "workspace=" + f.ws, "--bind", "memory=" + f.mem}, extra...)
}

// TestMemoryReviewCarriesAPatchOntoThePin: `pablo memory review` reads a
// proposer's patch at full scope: a clean one is carried onto the pinned
// file (the hidden edge kept) and `git apply --check` takes it there; a
// conflict the proposer could not be told is listed, exit 1; a file that
// is not a proposed patch is exit 2.
func TestMemoryReviewCarriesAPatchOntoThePin(t *testing.T) {
	t.Parallel()
	f := newMemoryReviewFixture(t)
	if b, _ := os.ReadFile(f.clean); strings.Contains(string(b), "vault") {
		t.Fatalf("the proposer's patch names the hidden record:\n%s", b)
	}
	out := filepath.Join(t.TempDir(), "reviewed.patch")
	code, stdout, stderr := runWithEnv(t, nil, f.args(f.clean, "--json", "--out", out)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var rv struct {
		Base        string           `json:"base"`
		Changes     []map[string]any `json:"changes"`
		Conflicts   []map[string]any `json:"conflicts"`
		Patch       string           `json:"patch"`
		PatchSHA256 string           `json:"patch_sha256"`
	}
	if err := json.Unmarshal([]byte(stdout), &rv); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(out)
	if rv.Base != f.commit || len(rv.Changes) != 1 || len(rv.Conflicts) != 0 || !strings.Contains(rv.Patch, "- vault") || string(written) != rv.Patch {
		t.Fatalf("review = %s\n--out wrote:\n%s", stdout, written)
	}
	if gitBin, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command(gitBin, "-C", f.mem, "apply", "--check", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("git apply --check on the pin: %v\n%s\n%s", err, b, rv.Patch)
		}
	}

	code, stdout, _ = runWithEnv(t, nil, f.args(f.colliding)...)
	if code != 1 || !strings.Contains(stdout, "conflict id_collision") || !strings.Contains(stdout, f.commit) {
		t.Errorf("a colliding proposal: exit %d, want 1 naming id_collision\n%s", code, stdout)
	}
	// A child's patch, proposed under a narrower scope (billing's file
	// alone: ledger is hidden too), is read under that scope, named by
	// --kinds and --paths; under the propose grant it does not apply,
	// and the error says why.
	if code, _, stderr := runWithEnv(t, nil, f.args(f.narrowed)...); code != 2 || !strings.Contains(stderr, "narrower memory scope") {
		t.Errorf("a child's patch under the propose grant: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = runWithEnv(t, nil, f.args(f.narrowed, "--json", "--kinds", "service", "--paths", "records/service/billing.md")...)
	if code != 0 || !strings.Contains(stdout, `- vault\n`) || !strings.Contains(stdout, `- ledger\n`) {
		t.Errorf("a child's patch under its own scope: exit %d, want both hidden edges kept\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runWithEnv(t, nil, f.args(f.clean, "--kinds", "service")...); code != 2 || !strings.Contains(stderr, "together") {
		t.Errorf("--kinds alone: exit %d, %s", code, stderr)
	}
	notPatch := filepath.Join(t.TempDir(), "x.patch")
	os.WriteFile(notPatch, []byte("hello\n"), 0o600)
	if code, _, stderr := runWithEnv(t, nil, f.args(notPatch)...); code != 2 || !strings.Contains(stderr, "names no memory commit") {
		t.Errorf("not a proposed patch: exit %d, %s", code, stderr)
	}
}
