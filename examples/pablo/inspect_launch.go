package main

import (
	"slices"
	"strings"

	"github.com/pabloagent/pablo/graph"
)

// LaunchPreview is what a task started now would be offered, from the
// graph: every usable tool, MCP tool, Skill, remote and model, in graph
// order (an approval-gated one is offered and asks when called). It is a
// preview: MCP tools are known only once probed, and each task's
// dispatch snapshot records what it was actually offered.
func (s *inspectStack) LaunchPreview() []graph.Node {
	var out []graph.Node
	for _, n := range s.Graph.Nodes {
		// The kinds a dispatch snapshot lists when admitted.
		switch n.Kind {
		case graph.KindTool, graph.KindMCPTool, graph.KindSkill, graph.KindRemote, graph.KindModel:
		default:
			continue
		}
		if n.State.Usable() {
			out = append(out, n)
		}
	}
	return out
}

// adapterView is one model's provider adapter and whether it supports
// what the routes that use it require.
type adapterView struct {
	Node     graph.Node
	Provider string
	Model    string
	// Supports are the capabilities the model declares; Requires what the
	// routes that list it require; Missing what it lacks of them.
	Supports, Requires, Missing []string
}

// Adapters are the stack's models with their adapters' support, from the
// graph's model and route nodes (as `pablo graph` prints them).
func (s *inspectStack) Adapters() []adapterView {
	var out []adapterView
	for _, n := range s.Graph.Nodes {
		if n.Kind != graph.KindModel {
			continue
		}
		v := adapterView{Node: n, Provider: n.Attributes["provider"], Model: n.Attributes["model"], Supports: splitList(n.Attributes["capabilities"])}
		for _, e := range s.Graph.Edges {
			if e.To != n.ID {
				continue
			}
			if route, ok := s.Graph.Node(e.From); ok && route.Kind == graph.KindRoute {
				for _, c := range splitList(route.Attributes["required_capabilities"]) {
					if !slices.Contains(v.Requires, c) {
						v.Requires = append(v.Requires, c)
					}
				}
			}
		}
		for _, c := range v.Requires {
			if !slices.Contains(v.Supports, c) {
				v.Missing = append(v.Missing, c)
			}
		}
		out = append(out, v)
	}
	return out
}

// auditView is a stack's audit level: what its trace keeps and where
// its spans go.
type auditView struct {
	// TracePath is the configured trace file as the deployment names it
	// ("binding:NAME:PATH"), empty for none.
	TracePath      string
	CaptureContent bool
	MaxBytes       int64
	// OTelExporter is "none" or "otlp"; OTelEndpoint where it exports.
	OTelExporter, OTelEndpoint string
}

// Audit is the stack's audit level.
func (s *inspectStack) Audit() auditView {
	o := s.d.Options()
	v := auditView{CaptureContent: o.Trace.CaptureContent, MaxBytes: o.Trace.MaxBytes, OTelExporter: o.OTel.Exporter}
	if o.Trace.Path != nil {
		v.TracePath = o.Trace.Path.String()
	}
	if o.OTel.Exporter != "none" && !o.OTel.SDKDisabled {
		v.OTelEndpoint = o.OTel.Endpoint
	}
	return v
}

// splitList splits a graph attribute's comma-separated list.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
