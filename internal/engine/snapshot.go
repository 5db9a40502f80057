package engine

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// The dispatch snapshot (issue 19) is taken at every agent's start, the
// root's and every child's: once its catalogs are open and its view built
// (the selections expanded, every tool decided under the agent's own
// authority, only the admitted ones kept), the snapshot lists exactly what
// the view offers and what the agent runs on, the ledger records it
// (ledger.RecordSnapshot) before the agent's first event, and run.started
// and the task object carry its digest.

// snapshotTools are the tool entries of v over catalogs (the catalogs v
// was built from), computed once per view: a view the runtime shares
// across tasks costs its digests once.
func (v *toolView) snapshotTools(catalogs []Catalog, audit func(string) string) []ledger.SnapshotEntry {
	v.snapOnce.Do(func() { v.snapTools = v.toolEntries(catalogs, audit) })
	return v.snapTools
}

// toolEntries lists every tool v offers, in the order the model sees
// them: its capability, the layer and rule that admitted it under the
// agent's authority, the digest of the definition the model is shown, the
// sandbox it runs in and, for an MCP tool, its server's live session (the
// definition digest a pin compares, the negotiated protocol version).
// Each MCP server one of them belongs to has its own entry.
// A deployment that sets audit levels (audit not nil) records each
// tool's as its audit_level attribute.
func (v *toolView) toolEntries(catalogs []Catalog, audit func(string) string) []ledger.SnapshotEntry {
	type session struct{ server, version, transport, digest string }
	live := map[authority.ID]session{}
	for _, c := range catalogs {
		h, ok := c.(HealthReporter)
		if !ok {
			continue
		}
		for _, srv := range h.Health() {
			for _, ts := range srv.Tools {
				if ts.Admitted {
					live[ts.ID] = session{server: srv.Server, version: srv.Version, transport: string(srv.Transport), digest: ts.Digest}
				}
			}
		}
	}
	out := make([]ledger.SnapshotEntry, 0, len(v.defs))
	servers := map[string]session{}
	for _, def := range v.defs {
		id := v.byWire[def.Name]
		d := v.decided[id]
		attrs := map[string]string{"name": def.Name, "digest": DefinitionDigest(def)}
		e := ledger.SnapshotEntry{ID: "tool:" + string(id), Kind: graph.KindTool, Layer: d.Layer, Rule: d.RuleID, Attributes: attrs}
		if s, ok := live[id]; ok {
			e.Kind = graph.KindMCPTool
			attrs["server"] = s.server
			setAttr(attrs, "definition_digest", s.digest)
			servers[s.server] = s
		}
		if sc, ok := v.owner[id].(SandboxReporter); ok {
			if p, ok := sc.Sandbox(id); ok {
				attrs["sandbox"] = p.String()
			}
		}
		if sa, ok := v.owner[id].(SnapshotAttributer); ok {
			maps.Copy(attrs, sa.SnapshotAttributes(id))
		}
		if d.NeedsApproval {
			attrs["approval"] = "required"
		}
		if audit != nil {
			attrs["audit_level"] = audit(string(id))
		}
		out = append(out, e)
	}
	for name, s := range servers {
		attrs := map[string]string{}
		setAttr(attrs, "protocol_version", s.version)
		setAttr(attrs, "transport", s.transport)
		out = append(out, ledger.SnapshotEntry{ID: "mcp:" + name, Kind: graph.KindMCPServer, Attributes: attrs})
	}
	return out
}

// DefinitionDigest is "sha256:" over a tool's definition as the model is
// shown it: {"description","name","parameters"}, the strings in canonical
// escaping and the parameters schema as offered.
func DefinitionDigest(def model.ToolDef) string {
	b := make([]byte, 0, 48+len(def.Name)+len(def.Description)+len(def.Parameters))
	b = append(b, `{"description":`...)
	b = jsonx.AppendString(b, def.Description)
	b = append(b, `,"name":`...)
	b = jsonx.AppendString(b, def.Name)
	b = append(b, `,"parameters":`...)
	if len(def.Parameters) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, def.Parameters...)
	}
	return sha256Tag(append(b, '}'))
}

// SnapshotAttributer is a catalog whose tools carry attributes of their
// own into the dispatch snapshot (a memory tool's pin and grant).
type SnapshotAttributer interface {
	SnapshotAttributes(id authority.ID) map[string]string
}

func setAttr(attrs map[string]string, k, v string) {
	if v != "" {
		attrs[k] = v
	}
}

// snapshot is the dispatch snapshot of agent s, whose view is built: its
// tools and MCP servers, the activated Skills its authority admits (with
// their metadata and instruction digests), the remotes its subagent tool
// offers, and its model (a route's entries, or the one model).
func (s *step) snapshot() *ledger.Snapshot {
	r := s.t.rt
	snap := &ledger.Snapshot{Version: ledger.SnapshotVersion, Admitted: slices.Clone(s.view.snapshotTools(s.catalogs, s.t.rt.opts.AuditLevel))}
	if r.opts.Deployment != nil {
		snap.Fingerprint = r.opts.Deployment.Fingerprint
	}
	for _, sk := range skillsFor(r.opts.Skills, s.t.req.Kind, s.conf.auth) {
		a := sk.Activation
		d := s.conf.auth.Decide(authority.Request{Capability: authority.ID(a.QualifiedName)})
		snap.Admitted = append(snap.Admitted, ledger.SnapshotEntry{ID: "skill:" + a.QualifiedName, Kind: graph.KindSkill, Layer: d.Layer, Rule: d.RuleID,
			Attributes: map[string]string{"path": a.RelativePath, "metadata_sha256": a.MetadataSHA256, "instruction_sha256": a.InstructionSHA256}})
	}
	if _, ok := s.owner[authority.Subagent]; ok && r.opts.Remote != nil {
		for _, name := range r.opts.Remote.Remotes() {
			snap.Admitted = append(snap.Admitted, ledger.SnapshotEntry{ID: "remote:" + name, Kind: graph.KindRemote})
		}
	}
	if m, ok := s.conf.route, s.conf.route != nil; ok {
		opts := m.r.Options()
		names := make([]string, 0, len(opts.Entries))
		for _, e := range opts.Entries {
			attrs := map[string]string{}
			setAttr(attrs, "provider", string(e.Provider))
			setAttr(attrs, "model", e.Model)
			snap.Admitted = append(snap.Admitted, ledger.SnapshotEntry{ID: "model:" + e.Name, Kind: graph.KindModel, Attributes: attrs})
			names = append(names, e.Name)
		}
		snap.Admitted = append(snap.Admitted, ledger.SnapshotEntry{ID: "route:" + m.name, Kind: graph.KindRoute,
			Attributes: map[string]string{"entries": strings.Join(names, ","), "max_attempts": strconv.Itoa(opts.MaxAttempts)}})
	} else {
		attrs := map[string]string{}
		setAttr(attrs, "provider", s.modelInfo.Provider)
		setAttr(attrs, "model", s.modelInfo.Model)
		snap.Admitted = append(snap.Admitted, ledger.SnapshotEntry{ID: "model", Kind: graph.KindModel, Attributes: attrs})
	}
	slices.SortFunc(snap.Admitted, func(a, b ledger.SnapshotEntry) int { return strings.Compare(a.ID, b.ID) })
	return snap
}

// recordSnapshot takes agent s's dispatch snapshot and records it in the
// ledger before the agent's first event. A root task whose tools are the
// runtime's shared ones has the same snapshot every time: it is encoded
// once per runtime.
func (s *step) recordSnapshot() *event.Outcome {
	r := s.t.rt
	var canonical []byte
	var digest ledger.ResultRef
	var err error
	if s.shared {
		r.snapOnce.Do(func() { r.snapJSON, r.snapDigest, r.snapErr = ledger.EncodeSnapshot(s.snapshot()) })
		canonical, digest, err = r.snapJSON, r.snapDigest, r.snapErr
	} else {
		canonical, digest, err = ledger.EncodeSnapshot(s.snapshot())
	}
	if err != nil {
		// Out of its bounds: nothing was offered or sent.
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolStartup, Delivery: outcome.NotSent, Reason: textx.Shorten(err.Error(), ledger.MaxReasonBytes)}
	}
	if err := s.t.root.RecordSnapshot(s.ctx, s.agent, canonical, digest); err != nil {
		return s.ledgerOutcome(err)
	}
	s.snapDigest = string(digest)
	return nil
}
