package pablo

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
)

// SnapshotEntry is one admitted option of a dispatch snapshot: a tool,
// an MCP server or tool, a Skill, a remote, a sandbox, the command rules,
// a model route or model, with the deciding layer and rule where policy
// decides it and the attributes that pin what it is (definition digest,
// negotiated protocol version, Skill metadata and instruction digests,
// sandbox profile, provider and model).
type SnapshotEntry struct {
	ID         string            `json:"id"`
	Kind       string            `json:"kind"`
	Layer      string            `json:"layer,omitempty"`
	Rule       string            `json:"rule,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// DispatchSnapshot is what a dispatch of the deployment is admitted to
// use, and its digest: "sha256:" over exactly the deployment
// fingerprint and the admitted entries — nothing time- or
// health-dependent, so two dispatches a minute apart with different
// health timestamps have equal digests, and changing a pin, a Skill file,
// a rule or the sandbox changes it.
type DispatchSnapshot struct {
	Fingerprint string          `json:"fingerprint"`
	Digest      string          `json:"digest"`
	Admitted    []SnapshotEntry `json:"admitted"`
}

// Snapshot expands the deployment's selections, re-runs the permission
// review (the graph, with Deployment.Decide for every tool) and keeps
// only the admitted options. Health is live state, not authority: a
// server a probe found unhealthy stays admitted (its calls fail as
// failures), and a probe only adds the negotiated protocol version and
// the tools discovered with their digests.
func (d *Deployment) Snapshot(ctx context.Context, opts GraphOptions) (*DispatchSnapshot, error) {
	g, err := d.Graph(ctx, opts)
	if err != nil {
		return nil, err
	}
	s := &DispatchSnapshot{Fingerprint: d.Fingerprint, Admitted: []SnapshotEntry{}}
	for _, n := range g.Nodes {
		switch n.Kind {
		case nodeToolProfile, nodeCredential:
			continue
		}
		if !admittedByAuthority(g, n) {
			continue
		}
		e := SnapshotEntry{ID: n.ID, Kind: n.Kind, Attributes: n.Attributes}
		if n.Kind == nodeTool || n.Kind == nodeMCPTool {
			dec, err := d.Decide(ctx, authority.ID(n.Capability), nil)
			if err != nil {
				return nil, err
			}
			if !dec.Allowed {
				continue
			}
			e.Layer, e.Rule = dec.Layer, dec.RuleID
		}
		s.Admitted = append(s.Admitted, e)
	}
	b, _ := json.Marshal(struct {
		Fingerprint string          `json:"fingerprint"`
		Admitted    []SnapshotEntry `json:"admitted"`
	}{s.Fingerprint, s.Admitted})
	s.Digest = sha256Tag(b)
	return s, nil
}

// admittedByAuthority reports whether n is ready, or not ready only
// because of health somewhere down its requirements.
func admittedByAuthority(g *Graph, n GraphNode) bool {
	if n.State == Ready {
		return true
	}
	for _, c := range g.Causes(n.ID) {
		if c.Health == "" {
			return false
		}
	}
	return true
}
