package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/egress"
)

type toolEgressKey struct{}

// EgressFunc receives one decision of a sandbox's egress proxy made for
// capability: shell.run, or an MCP server's "mcp/SERVER". It is safe for
// concurrent use: the proxy calls it from the goroutine serving the
// connection, before that connection is carried. An error (the decision
// could not be recorded) refuses the request.
type EgressFunc func(capability string, d authority.EgressDecision) error

// WithToolEgress returns a context that carries the egress recorder of
// one agent. The engine sets it; a catalog whose calls run behind an
// egress proxy reads it with ToolEgress.
func WithToolEgress(ctx context.Context, f EgressFunc) context.Context {
	return context.WithValue(ctx, toolEgressKey{}, f)
}

// ToolEgress returns the egress recorder of the current agent, or nil.
func ToolEgress(ctx context.Context) EgressFunc {
	f, _ := ctx.Value(toolEgressKey{}).(EgressFunc)
	return f
}

// EgressDecision is d in the public vocabulary.
func EgressDecision(d egress.Decision) authority.EgressDecision {
	return authority.EgressDecision{Method: d.Method, Host: d.Host, Port: d.Port, Allowed: d.Allowed, Rule: d.Rule, Reason: d.Reason}
}

// recordEgress records one egress decision as the ledger's decision record
// of capability, and, when it belongs to the call running now (the call of
// that capability, or of a tool of that MCP server), as that call's
// tool.egress event. A decision of an MCP server made outside any of its
// calls is a decision record only: no call owns it. The ledger's refusal
// of the record is the error (the proxy then refuses the request); an
// event the ledger or the sink refuses fails the call's task, as a
// refused tool.output does.
func (s *step) recordEgress(capability string, e authority.EgressDecision) error {
	e.Host = s.t.rt.opts.Secrets.String(e.Host)
	e.Reason = s.t.rt.opts.Secrets.String(e.Reason)
	if err := s.t.root.RecordDecision(s.ctx, s.agent, capability, e.Decision()); err != nil {
		return err
	}
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	l := &s.live
	if l.id == "" || l.failed != nil || l.name != capability && !strings.HasPrefix(l.name, capability+"/") {
		return nil
	}
	if l.failed = s.emit(event.EventData{Type: event.ToolEgress, CallID: l.id, Name: l.name, Egress: &e}); l.failed != nil {
		return errors.New(l.failed.Reason)
	}
	return nil
}
