package graphfill

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/graph"
)

// children adds the children node — what a child may be given at most:
// the root's admitted tools (without subagent), MCP servers, Skills and
// route entries, and the capacity — and a node per A2A remote with its
// configured card, bearer reference and, when probed, the fetched card's
// digest or why it was refused. A remote is reached only through the
// subagent tool, so it requires the children node; a deployment with
// remotes and children off leaves them unsupported.
func (b *graphBuilder) children(ctx context.Context, d *Source, set *authority.Set, cards []a2a.Probe, credential func(from, name string, consumer authority.Consumer, dest string)) error {
	o := &d.Config.Options
	if !o.Children.Enabled && len(o.A2A.Remotes) == 0 {
		return nil
	}
	const id = "children"
	attrs := map[string]string{}
	if o.Children.Enabled {
		var tools []string
		for _, t := range d.NativeTools() {
			if t == authority.Subagent {
				continue
			}
			dec, err := d.Decide(ctx, t, nil)
			if err != nil {
				return err
			}
			if dec.Allowed {
				tools = append(tools, string(t))
			}
		}
		var servers []string
		for _, s := range set.MCPServers() {
			if n := b.Lookup("mcp:" + s); n != nil && n.State != graph.Denied {
				servers = append(servers, s)
			}
		}
		var skills []string
		for _, s := range set.Skills() {
			if dec, err := d.Decide(ctx, s, nil); err == nil && dec.Allowed {
				skills = append(skills, string(s))
			}
		}
		var route []string
		if o.ModelRoute != "" {
			entries, _ := d.Config.RouteEntries(o.ModelRoute)
			for _, e := range entries {
				if e.Selectable() {
					route = append(route, e.Model)
				}
			}
		}
		slices.Sort(tools)
		attrs["tools"] = strings.Join(tools, ",")
		attrs["mcp_servers"] = strings.Join(servers, ",")
		attrs["skills"] = strings.Join(skills, ",")
		attrs["model_route"] = strings.Join(route, ",")
		attrs["max_active"] = strconv.Itoa(children.MaxActive)
		attrs["max_total"] = strconv.Itoa(children.MaxTotal)
	}
	b.Node(graph.Node{ID: id, Kind: graph.KindChildren, Capability: string(authority.Subagent), Attributes: attrs})
	if o.Children.Enabled {
		b.Edge("tool:"+string(authority.Subagent), id, graph.EdgeOffers)
		b.Edge(id, "tool:"+string(authority.Subagent), graph.EdgeRequires)
	} else {
		b.Set(id, graph.Unsupported, graph.Reason{Code: "children_disabled",
			Detail: "options.children.enabled is false, so the subagent tool and its spawn_remote are not offered and no remote can be reached; set options.children.enabled = true or remove the remotes"})
	}

	probed := map[string]a2a.Probe{}
	for _, p := range cards {
		probed[p.Remote] = p
	}
	for _, name := range sortedKeys(o.A2A.Remotes) {
		r := o.A2A.Remotes[name]
		rid := "remote:" + name
		ra := map[string]string{"card_url": r.CardURL, "endpoint": r.Endpoint, "trace_context": strconv.FormatBool(r.TraceContext)}
		if r.Bearer != nil {
			ra["bearer_scheme"], ra["bearer_credential"] = r.Bearer.Scheme, r.Bearer.Credential
		}
		b.Node(graph.Node{ID: rid, Kind: graph.KindRemote, Capability: name, Attributes: ra})
		b.Edge(id, rid, graph.EdgeOffers)
		b.Edge(rid, id, graph.EdgeRequires)
		if r.Bearer != nil {
			credential(rid, r.Bearer.Credential, authority.ConsumerA2ABearer, r.Endpoint)
		}
		if o.Children.Enabled {
			// Every spawn_remote to it asks when a layer's a2a_remotes
			// entry for it, or anything gating the subagent tool's
			// delegations, requires approval.
			dec, err := d.Decide(ctx, authority.Subagent, SpawnRemoteProbe(name))
			if err != nil {
				return err
			}
			b.Gate(rid, dec)
		}
		p, ok := probed[name]
		if !ok {
			continue
		}
		if !p.Admitted {
			b.Set(rid, graph.Unhealthy, graph.Reason{Code: "card_" + string(p.Reason), Health: "refused", Detail: oneLineReason(p.Detail)})
			continue
		}
		b.Note(rid, graph.Reason{Code: "card_admitted", Health: "admitted", Digest: p.Card.Digest,
			Detail: "the fetched Agent Card " + p.Card.Digest + " is admitted (" + strconv.Quote(p.Card.Name) + " " + strconv.Quote(p.Card.Version) + ")"})
	}
	return nil
}

// SpawnRemoteProbe is a spawn_remote call to the remote name, as the graph
// decides it: what the layers and the approvals say of a delegation to it.
func SpawnRemoteProbe(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"action": "spawn_remote", "remote_request": map[string]any{
		"remote": name, "parts": []any{map[string]string{"text": "pablo-graph-probe"}}, "accepted_output_modes": []string{"text/plain"}}})
	return b
}
