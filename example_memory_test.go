package pablo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
)

// memoryFixture is a memory repository (a git repository of records and
// docs, committed with go-git), a workspace and a deployment whose
// options.memory grants the six tools, in one temporary directory.
type memoryFixture struct {
	dir  string
	repo *git.Repository
	n    int
}

// memoryRecords is the first commit of the memory repository.
var memoryRecords = map[string]string{
	"records/service/billing.md": "---\nid: billing\nkind: service\nowner: payments\nrepo: acme/billing\nstack: go\nedges:\n  depends_on: [ledger, vault]\n---\nBilling charges customers monthly.\n",
	"records/service/ledger.md":  "---\nid: ledger\nkind: service\nowner: payments\nrepo: acme/ledger\nstack: go\n---\nThe ledger keeps balances.\n",
	"records/secret/vault.md":    "---\nid: vault\nkind: secret\nowner: security\n---\nWhere the signing keys live.\n",
	"handbook/oncall.md":         "# On call\nPage the payments team for billing.\n",
	"ontology.toml":              "[kinds.service]\nrequired = [\"owner\", \"repo\"]\n[kinds.secret]\n[edges.depends_on]\nfrom = [\"service\"]\n",
}

const memoryGrants = `
[options.memory.grants.query]
kinds = ["service"]
paths = ["*"]
[options.memory.grants.read]
kinds = ["service"]
paths = ["*"]
[options.memory.grants.grep]
kinds = ["service"]
paths = ["handbook/"]
[options.memory.grants.diff]
kinds = ["service"]
paths = ["*"]
[options.memory.grants.propose_update]
kinds = ["service"]
paths = ["records/service/"]
[options.memory.grants.validation]
kinds = ["service"]
paths = ["*"]
`

func newMemoryFixture(turns, extra string) *memoryFixture {
	dir, err := os.MkdirTemp("", "pablo-memory")
	if err != nil {
		log.Fatal(err)
	}
	f := &memoryFixture{dir: dir}
	if f.repo, err = git.PlainInit(filepath.Join(dir, "memory"), false); err != nil {
		log.Fatal(err)
	}
	f.commit(memoryRecords)
	os.Mkdir(filepath.Join(dir, "work"), 0o755)
	os.WriteFile(filepath.Join(dir, "turns.json"), []byte(turns), 0o600)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1

[options.model]
provider = "script"
script = { base = "source", path = "turns.json" }

[options.run]
workspace = { base = "binding", name = "workspace", path = "." }

[options.memory]
repository = { base = "binding", name = "memory", path = "." }
ref = "refs/heads/master"
graph_paths = ["records/"]
docs_paths = ["handbook/"]
ontology = { base = "binding", name = "memory", path = "ontology.toml" }
`+memoryGrants+extra), 0o600)
	return f
}

// commit writes files into the memory work tree and commits them: the
// ref moves, and tasks already pinned keep reading their commit.
func (f *memoryFixture) commit(files map[string]string) string {
	wt, err := f.repo.Worktree()
	if err != nil {
		log.Fatal(err)
	}
	for p, text := range files {
		full := filepath.Join(f.dir, "memory", p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(text), 0o644)
		wt.Add(p)
	}
	f.n++
	sig := &object.Signature{Name: "memory", Email: "memory@invalid", When: time.Date(2026, 12, 1, 0, f.n, 0, 0, time.UTC)}
	h, err := wt.Commit(fmt.Sprintf("memory %d", f.n), &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		log.Fatal(err)
	}
	return h.String()
}

// run loads the deployment, runs one task with approver and prints each
// memory tool's result through show.
func (f *memoryFixture) run(input string, approver pablo.Approver, show func(name string, result map[string]any)) *pablo.TaskObject {
	defer os.RemoveAll(f.dir)
	return f.runOn(f.load(), input, approver, show)
}

// load loads the fixture's deployment.
func (f *memoryFixture) load() *pablo.Deployment {
	d, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(f.dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": filepath.Join(f.dir, "work"), "memory": filepath.Join(f.dir, "memory")},
	})
	if err != nil {
		log.Fatal(err)
	}
	return d
}

// runOn runs one task of d as run does.
func (f *memoryFixture) runOn(d *pablo.Deployment, input string, approver pablo.Approver, show func(name string, result map[string]any)) *pablo.TaskObject {
	ctx := context.Background()
	rt, err := d.NewRuntime(ctx, pablo.HostOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.StartTask(ctx, pablo.TaskRequest{Input: input, Approver: approver})
	if err != nil {
		log.Fatal(err)
	}
	for ev := range task.Events() {
		if ev.Type == event.ToolFinished && strings.HasPrefix(ev.Name, "memory.") {
			var r map[string]any
			json.Unmarshal(ev.Result, &r)
			show(ev.Name, r)
		}
	}
	obj := task.Wait()
	return obj
}

func memoryOf(r map[string]any) map[string]any {
	m, _ := r["memory"].(map[string]any)
	return m
}

// memory.graph.search finds records by text, kind, edge, owner, repo, stack
// or association at the task's pinned commit. The query grant allows the
// service kind only: the secret record is neither returned nor counted.
func ExampleDeployment_NewRuntime_memorySearch() {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_graph_search", "arguments": {"owner": "payments"}}]},
  {"text": ["Two payments services."]}]}`, "")
	obj := f.run("Which services do payments own?", nil, func(name string, r map[string]any) {
		m := memoryOf(r)
		for _, rec := range m["records"].([]any) {
			fmt.Println(name, rec.(map[string]any)["id"])
		}
		fmt.Println("total", m["total"])
	})
	fmt.Println(obj.Outcome.Status)
	// Output:
	// memory.graph.search billing
	// memory.graph.search ledger
	// total 2
	// completed
}

// memory.record.read returns one record, frontmatter and body. Edges to a
// record outside the read grant are not shown.
func ExampleDeployment_NewRuntime_memoryRead() {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_record_read", "arguments": {"id": "billing"}}]},
  {"text": ["Read."]}]}`, "")
	f.run("What does billing depend on?", nil, func(name string, r map[string]any) {
		rec := memoryOf(r)["record"].(map[string]any)
		fmt.Println(name, rec["id"], rec["owner"], rec["edges"])
		fmt.Print(rec["body"])
	})
	// Output:
	// memory.record.read billing payments [map[kind:depends_on to:ledger]]
	// Billing charges customers monthly.
}

// memory.docs.grep matches a literal or an RE2 pattern over the docs paths
// the grant allows, with path, line and revision.
func ExampleDeployment_NewRuntime_memoryGrep() {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_docs_grep", "arguments": {"pattern": "^Page the \\w+", "regexp": true}}]},
  {"text": ["Found the runbook line."]}]}`, "")
	f.run("Who is paged for billing?", nil, func(name string, r map[string]any) {
		for _, m := range memoryOf(r)["matches"].([]any) {
			m := m.(map[string]any)
			fmt.Println(name, m["path"], m["line"], m["text"], len(m["revision"].(string)))
		}
	})
	// Output:
	// memory.docs.grep handbook/oncall.md 2 Page the payments team for billing. 40
}

// memory.snapshot.diff compares the pin with the current ref. Reading
// beyond the pin needs an approval (or the diff grant's refresh): here
// the approver allows it once, and the diff lists what changed since.
func ExampleDeployment_NewRuntime_memoryDiff() {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_snapshot_diff", "arguments": {"against": "current"}}]},
  {"text": ["Compared."]}]}`, "")
	approver := approveMemory(func() {
		// The ref moves after the task pinned its commit.
		f.commit(map[string]string{"records/service/ledger.md": strings.Replace(memoryRecords["records/service/ledger.md"], "owner: payments", "owner: finance", 1)})
	})
	f.run("What changed in memory?", approver, func(name string, r map[string]any) {
		for _, c := range memoryOf(r)["changes"].([]any) {
			c := c.(map[string]any)
			fmt.Println(name, c["action"], c["id"], c["fields"])
		}
	})
	// Output:
	// approval asked: memory.snapshot.diff
	// memory.snapshot.diff modified ledger [owner]
}

// approveMemory allows every request once, running before first.
type approveMemory func()

func (a approveMemory) Approve(_ context.Context, req approval.Request) (approval.Answer, error) {
	fmt.Println("approval asked:", req.Tool)
	a()
	return approval.AllowOnce, nil
}

// memory.update.propose writes a git format-patch file in the workspace
// (never in the memory repository) and returns its path and SHA-256, ready
// for an artifact handoff.
func ExampleDeployment_NewRuntime_memoryPropose() {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_update_propose", "arguments": {"subject": "add invoices", "changes": [
    {"op": "add", "record": {"id": "invoices", "kind": "service", "owner": "payments", "repo": "acme/invoices", "body": "Invoices."}}]}}]},
  {"text": ["Proposed."]}]}`, "")
	work := filepath.Join(f.dir, "work")
	f.run("Record the invoices service.", nil, func(name string, r map[string]any) {
		m := memoryOf(r)
		b, _ := os.ReadFile(filepath.Join(work, m["path"].(string)))
		sum := sha256.Sum256(b)
		fmt.Println(name, m["path"].(string)[:len("memory-proposals/")], m["files"], m["revision"] == hex.EncodeToString(sum[:]))
		fmt.Println(strings.SplitN(string(b), "\n", 2)[0])
	})
	// Output:
	// memory.update.propose memory-proposals/ [records/service/invoices.md] true
	// From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
}

// memory.ontology.validate checks proposed records against the ontology:
// here a required field is missing and an edge dangles.
func ExampleDeployment_NewRuntime_memoryValidate() {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_ontology_validate", "arguments": {"changes": [
    {"op": "add", "record": {"id": "invoices", "kind": "service", "owner": "payments", "edges": [{"kind": "depends_on", "to": "nowhere"}]}}]}}]},
  {"text": ["Two problems."]}]}`, "")
	f.run("Is this record valid?", nil, func(name string, r map[string]any) {
		m := memoryOf(r)
		fmt.Println(name, "valid:", m["valid"])
		for _, v := range m["violations"].([]any) {
			v := v.(map[string]any)
			fmt.Println(v["code"], v["field"])
		}
	})
	// Output:
	// memory.ontology.validate valid: false
	// missing_field repo
	// dangling_edge edges.depends_on
}

// A patch from memory.update.propose is written against the records as
// the proposer's grant sees them, and the proposer is never told what its
// grant hides. The host reviews it with full scope: here the task (whose
// grants hide the secret kind) edits billing, whose edge to the secret
// vault it cannot see, and adds a service with the ID vault. The review
// names the collision the task could not be told, and carries the edit
// onto billing's file, keeping the hidden edge, so `git am` takes it.
func ExampleDeployment_ReviewMemoryProposal() {
	f := newMemoryFixture(`{"turns": [
  {"tool_calls": [{"name": "memory_update_propose", "arguments": {"subject": "billing moves to finance", "changes": [
    {"op": "edit", "record": {"id": "billing", "kind": "service", "owner": "finance", "repo": "acme/billing", "stack": "go",
      "edges": [{"kind": "depends_on", "to": "ledger"}], "body": "Billing charges customers monthly.\n"}},
    {"op": "add", "record": {"id": "vault", "kind": "service", "owner": "finance", "repo": "acme/vault"}}]}}]},
  {"text": ["Proposed."]}]}`, "")
	defer os.RemoveAll(f.dir)
	d := f.load()
	var proposed string
	f.runOn(d, "Billing moves to finance; record the vault service.", nil, func(name string, r map[string]any) {
		m := memoryOf(r)
		fmt.Println(name, m["files"], "violations:", len(m["violations"].([]any)))
		proposed = m["path"].(string)
	})
	patch, err := os.ReadFile(filepath.Join(f.dir, "work", proposed))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the proposal names vault's edge:", strings.Contains(string(patch), "- vault"))

	rv, err := d.ReviewMemoryProposal(context.Background(), patch, deployment.MemoryReviewOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range rv.Changes {
		fmt.Println("change:", c.Op, c.ID, c.Path)
	}
	for _, c := range rv.Conflicts {
		fmt.Println("conflict:", c.Code, c.ID)
	}
	fmt.Println("the reviewed patch keeps vault's edge:", strings.Contains(rv.Patch, "\n+    - vault\n"), rv.Files)
	// Output:
	// memory.update.propose [records/service/billing.md records/service/vault.md] violations: 0
	// the proposal names vault's edge: false
	// change: edit billing records/service/billing.md
	// change: add vault records/service/vault.md
	// conflict: id_collision vault
	// the reviewed patch keeps vault's edge: true [records/service/billing.md records/service/vault.md]
}
