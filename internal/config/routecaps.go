package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The model capabilities a route may require (options.routes.NAME.
// required_capabilities) and a model profile may declare
// (options.models.NAME.capabilities).
const (
	CapTextStreaming    = "text_streaming"
	CapToolCalls        = "tool_calls"
	CapStructuredOutput = "structured_output"
)

// adapterCapabilities are what every model adapter supports: each
// streams text and calls tools; structured_output is recognized but no
// adapter supports it (REFERENCE §1.12).
var adapterCapabilities = []string{CapTextStreaming, CapToolCalls}

// Supports returns what the profile supports: what its adapter
// supports, narrowed by its capabilities table (text_streaming = false
// or tool_calls = false removes one; a table can only narrow).
func (m ModelOptions) Supports() []string {
	var declared struct {
		TextStreaming *bool `json:"text_streaming"`
		ToolCalls     *bool `json:"tool_calls"`
	}
	if len(m.Capabilities) > 0 {
		_ = json.Unmarshal(m.Capabilities, &declared) // the spec checked its shape
	}
	out := []string{}
	for _, c := range adapterCapabilities {
		off := (c == CapTextStreaming && declared.TextStreaming != nil && !*declared.TextStreaming) ||
			(c == CapToolCalls && declared.ToolCalls != nil && !*declared.ToolCalls)
		if !off {
			out = append(out, c)
		}
	}
	return out
}

// RouteRequirements returns what route name requires of every entry:
// its required_capabilities, or by default text_streaming plus
// tool_calls when the deployment enables any tool.
func (d *Deployment) RouteRequirements(name string) []string {
	return d.Options.RouteRequirements(name, d.toolsEnabled())
}

// RouteRequirements returns what route name requires of every entry: its
// required_capabilities, or by default text_streaming plus tool_calls
// when tools says the deployment enables any tool.
func (o *Options) RouteRequirements(name string, tools bool) []string {
	if r, ok := o.Routes[name]; ok && r.RequiredCapabilities != nil {
		return slices.Clone(r.RequiredCapabilities)
	}
	out := []string{CapTextStreaming}
	if tools {
		out = append(out, CapToolCalls)
	}
	return out
}

// toolsEnabled reports whether a task of the deployment offers the model
// any tool: a native one or an MCP server's.
func (d *Deployment) toolsEnabled() bool {
	return len(d.nativeTools(&d.Options)) > 0 || len(d.Options.MCP.Servers) > 0
}

// FlatEntry is one flattened entry of a route with what the routes on
// its path require of it and which of that its model lacks.
type FlatEntry struct {
	// Model is the options.models name.
	Model string
	// Required is the union of the requirements of every route on the
	// way from the route to this entry.
	Required []string
	// Missing is what the model's capabilities lack of Required; an entry
	// with any is never selected.
	Missing []string
}

// Selectable reports whether the route may select the entry.
func (e FlatEntry) Selectable() bool { return len(e.Missing) == 0 }

// RouteEntries returns route name's flattened entries, in order, each
// with what it is required to support and what its model lacks. The
// deployment's load already refused routes that cannot be flattened.
func (d *Deployment) RouteEntries(name string) ([]FlatEntry, error) {
	return d.Options.RouteEntries(name, d.toolsEnabled())
}

// RouteEntries is Deployment.RouteEntries with tools saying whether the
// deployment enables any tool (which the default requirement depends on).
func (o *Options) RouteEntries(name string, tools bool) ([]FlatEntry, error) {
	flat, err := expandRoute(name, o, nil)
	if err != nil {
		return nil, err
	}
	required := map[string][]string{}
	o.routeRequirements(name, tools, nil, required, map[string]bool{})
	out := make([]FlatEntry, 0, len(flat))
	for _, m := range flat {
		e := FlatEntry{Model: m, Required: required[m]}
		has := o.Models[m].Supports()
		for _, c := range e.Required {
			if !slices.Contains(has, c) {
				e.Missing = append(e.Missing, c)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// routeRequirements adds, for each model under route name, the union of
// inherited and the requirements of name.
func (o *Options) routeRequirements(name string, tools bool, inherited []string, into map[string][]string, seen map[string]bool) {
	if seen[name] {
		return
	}
	seen[name] = true
	req := slices.Clone(inherited)
	for _, c := range o.RouteRequirements(name, tools) {
		if !slices.Contains(req, c) {
			req = append(req, c)
		}
	}
	for _, e := range o.Routes[name].Entries {
		if e.Model != "" {
			into[e.Model] = req
			continue
		}
		o.routeRequirements(e.Route, tools, req, into, seen)
	}
	delete(seen, name)
}

// CheckRouteCapabilities refuses route name when none of its entries
// supports everything it requires: the diagnostic (a *Error at the
// route's required_capabilities) names the route and what each entry
// lacks. The runtime asks it before it builds the route; the graph shows
// the same route unsupported.
func (d *Deployment) CheckRouteCapabilities(name string) error {
	ptr := "/options/routes" + pointer(name) + "/required_capabilities"
	entries, err := d.RouteEntries(name)
	if err != nil {
		return err
	}
	if slices.Contains(d.RouteRequirements(name), CapStructuredOutput) {
		return &Error{Code: CodeUnsupportedFeature, Option: ptr,
			Message: fmt.Sprintf("route %q requires structured_output, which is recognized but no model adapter supports; remove it from required_capabilities", name)}
	}
	var gaps []string
	for _, e := range entries {
		if e.Selectable() {
			return nil
		}
		gaps = append(gaps, fmt.Sprintf("model %q lacks %s", e.Model, strings.Join(e.Missing, ", ")))
	}
	return &Error{Code: CodeInvalidValue, Option: ptr,
		Message: fmt.Sprintf("no entry of route %q supports what it requires (%s): %s; add an entry whose model supports it, or change the capabilities or required_capabilities",
			name, strings.Join(entryRequired(entries), ", "), strings.Join(gaps, "; "))}
}

// entryRequired is the union of the entries' requirements, in order.
func entryRequired(entries []FlatEntry) []string {
	var out []string
	for _, e := range entries {
		for _, c := range e.Required {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}
