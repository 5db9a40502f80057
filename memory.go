package pablo

import (
	"context"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/internal/fsx"
	"github.com/pabloagent/pablo/internal/memory"
	"github.com/pabloagent/pablo/ledger"
)

// Seed 002's memory tools (options.memory): the deployment's side. The
// catalog itself is internal/engine's MemoryCatalog.

// memoryProposeDir is the workspace directory proposed patches are
// written under.
const memoryProposeDir = "memory-proposals"

// memoryGrants turns options.memory.grants into the tools' grants.
func memoryGrants(o config.MemoryOptions) map[string]memory.Grant {
	grants := map[string]memory.Grant{}
	for _, g := range config.MemoryGrants() {
		if cg, ok := o.Grants[g[0]]; ok {
			grants[g[1]] = memory.Grant{Scope: memory.Scope{Kinds: cg.Kinds, Paths: cg.Paths}, Refresh: cg.Refresh}
		}
	}
	return grants
}

// memoryOpener opens the memory repository once and returns what opens a
// task's memory catalog, pinned when the task starts. Tasks on one commit
// share its index.
func (d *Deployment) memoryOpener() (func(ctx context.Context, clk ledger.Clock) (*engine.MemoryCatalog, error), error) {
	o := d.c.Options.Memory
	dir, err := d.c.MemoryRepository()
	if err != nil {
		return nil, fmt.Errorf("pablo: options.memory.repository: %w", err)
	}
	store, err := memory.Open(dir, memory.Options{GraphPaths: o.GraphPaths, DocsPaths: o.DocsPaths, Cache: memory.NewCache(4)})
	if err != nil {
		return nil, fmt.Errorf("pablo: options.memory: %w", err)
	}
	// The ref must name a commit now: a deployment whose memory cannot be
	// pinned is not ready, rather than failing each task.
	if _, err := store.Resolve(o.Ref); err != nil {
		return nil, fmt.Errorf("pablo: options.memory.ref: %w", err)
	}
	var ont *memory.Ontology
	if o.Ontology != nil {
		p, err := d.c.MemoryOntology()
		if err != nil {
			return nil, fmt.Errorf("pablo: options.memory.ontology: %w", err)
		}
		b, err := fsx.ReadFile(context.Background(), p, memory.MaxOntologyBytes)
		if err != nil {
			return nil, fmt.Errorf("pablo: options.memory.ontology: %w", err)
		}
		if ont, err = memory.ParseOntology("ontology", b); err != nil {
			return nil, fmt.Errorf("pablo: options.memory.ontology: %w", err)
		}
	}
	grants := memoryGrants(o)
	ws, wsErr := d.Workspace()
	write := func(name string, data []byte) (string, error) {
		if wsErr != nil {
			return "", wsErr
		}
		return memory.WriteProposal(ws, memoryProposeDir, name, data)
	}
	read := func(rel string) ([]byte, error) {
		if wsErr != nil {
			return nil, wsErr
		}
		return memory.ReadProposal(ws, rel)
	}
	return func(ctx context.Context, clk ledger.Clock) (*engine.MemoryCatalog, error) {
		tools, err := memory.OpenTools(ctx, memory.ToolsOptions{Store: store, Ref: o.Ref, Ontology: ont, Grants: grants, WritePatch: write, ReadPatch: read, Clock: clk})
		if err != nil {
			return nil, fmt.Errorf("pablo: memory: %w", err)
		}
		return engine.NewMemoryCatalog(tools, grants), nil
	}, nil
}

// memoryCatalogs wraps a runtime's per-task catalogs (nil for none) with
// the task's memory catalog, pinned when the task starts.
func (d *Deployment) memoryCatalogs(clk ledger.Clock, prev func(context.Context, TaskInfo) ([]ToolCatalog, error)) (func(context.Context, TaskInfo) ([]ToolCatalog, error), error) {
	open, err := d.memoryOpener()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, task TaskInfo) ([]ToolCatalog, error) {
		var cats []ToolCatalog
		if prev != nil {
			more, err := prev(ctx, task)
			cats = append(cats, more...)
			if err != nil {
				return cats, err
			}
		}
		mc, err := open(ctx, clk)
		if err != nil {
			return cats, err
		}
		return append(cats, mc), nil
	}, nil
}

// memoryGraph adds the memory node (the repository, its ref and the commit
// the ref names now) and each granted memory tool to the graph. The node is
// unsupported when the repository does not open, the ref does not resolve
// or the ontology does not load; the diff tool is approval-gated unless
// its grant says refresh.
func (d *Deployment) memoryGraph(b *graph.Builder, set *authority.Set) {
	o := d.c.Options.Memory
	if !o.Configured() {
		return
	}
	attrs := map[string]string{"repository": o.Repository.String(), "ref": o.Ref,
		"graph_paths": strings.Join(o.GraphPaths, ","), "docs_paths": strings.Join(o.DocsPaths, ",")}
	b.Node(graph.Node{ID: "memory", Kind: graph.KindMemory, Attributes: attrs})
	if commit, err := d.memoryReady(); err != nil {
		b.Set("memory", graph.Unsupported, graph.Reason{Code: "memory_unavailable", Detail: err.Error()})
	} else {
		b.Lookup("memory").Attributes["commit"] = commit
	}
	for _, g := range config.MemoryGrants() {
		grant, ok := o.Grants[g[0]]
		if !ok {
			continue
		}
		id := "tool:" + g[1]
		ta := map[string]string{"grant": g[0]}
		setAttrString(ta, "kinds", strings.Join(grant.Kinds, ","))
		setAttrString(ta, "paths", strings.Join(grant.Paths, ","))
		b.Node(graph.Node{ID: id, Kind: graph.KindTool, Capability: g[1], Attributes: ta})
		b.Edge("tools", id, graph.EdgeOffers)
		b.Edge(id, "memory", graph.EdgeRequires)
		dec := set.Decide(authority.Request{Capability: authority.ID(g[1])})
		if g[1] == memory.ToolDiff && !grant.Refresh {
			dec.RequireApproval(engine.MemoryLayer, engine.RuleMemoryBeyondPin)
		}
		b.Deny(id, dec)
	}
}

// memoryReady opens the memory repository, resolves the ref and loads the
// ontology, as a runtime would, and returns the commit the ref names.
func (d *Deployment) memoryReady() (string, error) {
	o := d.c.Options.Memory
	dir, err := d.c.MemoryRepository()
	if err != nil {
		return "", fmt.Errorf("options.memory.repository: %w", err)
	}
	store, err := memory.Open(dir, memory.Options{GraphPaths: o.GraphPaths, DocsPaths: o.DocsPaths})
	if err != nil {
		return "", fmt.Errorf("options.memory.repository: %w", err)
	}
	pin, err := store.Resolve(o.Ref)
	if err != nil {
		return "", fmt.Errorf("options.memory.ref: %w", err)
	}
	if o.Ontology != nil {
		p, err := d.c.MemoryOntology()
		if err != nil {
			return "", fmt.Errorf("options.memory.ontology: %w", err)
		}
		b, err := fsx.ReadFile(context.Background(), p, memory.MaxOntologyBytes)
		if err == nil {
			_, err = memory.ParseOntology("ontology", b)
		}
		if err != nil {
			return "", fmt.Errorf("options.memory.ontology: %w", err)
		}
	}
	return pin.Commit, nil
}

func setAttrString(attrs map[string]string, k, v string) {
	if v != "" {
		attrs[k] = v
	}
}

// ReviewMemoryProposal reads a patch written by memory.update.propose (a
// workspace file the task returned, or handed off as an artifact) as a
// reviewer with full scope: at the commit the patch names, it reports
// every conflict, and carries the patch onto that commit's files so that
// `git am` takes it. Nothing is written anywhere: applying the patch to
// the memory repository is the reviewer's decision. A patch that is not
// from propose, names no commit, or does not apply to the records as the
// proposer's scope saw them is an error.
func (d *Deployment) ReviewMemoryProposal(ctx context.Context, patch []byte, opts deployment.MemoryReviewOptions) (deployment.MemoryReview, error) {
	o := d.c.Options.Memory
	if !o.Configured() {
		return deployment.MemoryReview{}, fmt.Errorf("pablo: options.memory is not configured")
	}
	scope := memory.Scope{Kinds: opts.Kinds, Paths: opts.Paths}
	if len(scope.Kinds) == 0 && len(scope.Paths) == 0 {
		g, ok := memoryGrants(o)[memory.ToolPropose]
		if !ok {
			return deployment.MemoryReview{}, fmt.Errorf("pablo: options.memory.grants.propose_update is not configured; give the proposer's kinds and paths")
		}
		scope = g.Scope
	}
	base, ok := memory.PatchBase(patch)
	if !ok {
		return deployment.MemoryReview{}, fmt.Errorf("pablo: the patch names no memory commit (a %q line); review a patch memory.update.propose wrote", "Proposed against memory commit")
	}
	dir, err := d.c.MemoryRepository()
	if err != nil {
		return deployment.MemoryReview{}, fmt.Errorf("pablo: options.memory.repository: %w", err)
	}
	store, err := memory.Open(dir, memory.Options{GraphPaths: o.GraphPaths, DocsPaths: o.DocsPaths})
	if err != nil {
		return deployment.MemoryReview{}, fmt.Errorf("pablo: options.memory.repository: %w", err)
	}
	pin, err := store.Resolve(base)
	if err != nil {
		return deployment.MemoryReview{}, fmt.Errorf("pablo: the patch's memory commit: %w", err)
	}
	ix, err := store.Index(ctx, pin)
	if err != nil {
		return deployment.MemoryReview{}, fmt.Errorf("pablo: memory: %w", err)
	}
	var ont *memory.Ontology
	if o.Ontology != nil {
		p, err := d.c.MemoryOntology()
		if err != nil {
			return deployment.MemoryReview{}, fmt.Errorf("pablo: options.memory.ontology: %w", err)
		}
		b, err := fsx.ReadFile(ctx, p, memory.MaxOntologyBytes)
		if err == nil {
			ont, err = memory.ParseOntology("ontology", b)
		}
		if err != nil {
			return deployment.MemoryReview{}, fmt.Errorf("pablo: options.memory.ontology: %w", err)
		}
	}
	rv, err := store.Review(ix, ont, patch, scope)
	if err != nil {
		if len(opts.Kinds) == 0 && len(opts.Paths) == 0 && memory.CodeOf(err) == memory.CodeBadProposal {
			// A child's grant, narrowed by its memory scope, sees records
			// otherwise than the propose_update grant does.
			return deployment.MemoryReview{}, fmt.Errorf("pablo: memory review: %w (read under options.memory.grants.propose_update; a patch a child proposed under a narrower memory scope needs that scope's kinds and paths)", err)
		}
		return deployment.MemoryReview{}, fmt.Errorf("pablo: memory review: %w", err)
	}
	out := deployment.MemoryReview{Base: pin.Commit, Changes: []deployment.MemoryChange{}, Conflicts: []deployment.MemoryConflict{}, Files: []string{}}
	for _, c := range rv.Changes {
		out.Changes = append(out.Changes, deployment.MemoryChange{Op: c.Op, ID: c.Record.ID, Kind: c.Record.Kind, Path: c.Record.Path})
	}
	for _, v := range rv.Conflicts {
		out.Conflicts = append(out.Conflicts, deployment.MemoryConflict{Code: v.Code, ID: v.ID, Path: v.Path, Field: v.Field, Reason: v.Reason})
	}
	if rv.Patch != nil {
		out.Patch, out.PatchSHA256, out.Files = string(rv.Patch.Text), rv.Patch.SHA256, rv.Patch.Files
	}
	return out, nil
}
