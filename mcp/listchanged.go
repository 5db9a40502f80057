package mcp

import (
	"context"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// A server's notifications/tools/list_changed is honoured within the
// task's authority, which a change can only narrow: before the next call
// to that server its tools are listed again and each admitted tool is
// decided again against its new definition. A tool whose definition
// changed (its pin, when it has one, no longer matches; without one, the
// definition the model was shown is no longer the server's) or that the
// server no longer lists fails closed with ErrDefinitionChanged for the
// rest of the task; a tool listed for the first time is recorded, not
// admitted: it joins the next task's catalog, decided there. Every
// re-decision is recorded in the ledger, and the health report shows it.

// relist lists srv's tools again after the server said they changed.
func (c *Catalog) relist(ctx context.Context, srv *server) error {
	if !srv.sess.listChanged.CompareAndSwap(true, false) {
		return nil
	}
	raws, err := srv.sess.listTools(ctx)
	if err != nil {
		// The list could not be read: nothing of the server can be trusted
		// to be what was admitted.
		c.mu.Lock()
		for id, t := range c.tools {
			if t.srv == srv {
				c.stale[id] = fmt.Errorf("%w: %s: the server said its tools changed and they could not be listed again: %v", ErrDefinitionChanged, id, c.scrub(err))
			}
		}
		c.mu.Unlock()
		return nil
	}
	now := map[string]*definition{}
	for _, raw := range raws {
		if def, err := parseDefinition(raw); err == nil && authority.ValidMCPToolName(def.Name) {
			now[def.Name] = def
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := map[string]bool{}
	for id, t := range c.tools {
		if t.srv != srv {
			continue
		}
		listed[t.def.Name] = true
		def, ok := now[t.def.Name]
		var reason error
		switch {
		case !ok:
			reason = fmt.Errorf("%w: %s: the server no longer lists it", ErrDefinitionChanged, id)
		case def.digest != t.def.digest:
			want := t.def.digest
			if pin, ok := srv.cfg.Pins[t.def.Name]; ok {
				want = pin
			}
			reason = &DefinitionChangedError{Tool: string(id), Want: want, Got: def.digest}
		}
		if reason == nil || c.stale[id] != nil {
			continue
		}
		c.stale[id] = reason
		got := ""
		if def != nil {
			got = def.digest
		}
		c.record(ctx, string(id), authority.Decision{Layer: "mcp/" + srv.cfg.Name, RuleID: "builtin.mcp." + string(CodeDefinitionChanged), Reason: reason.Error()}, got)
		c.setHealthLocked(srv.health, func(h *Health) {
			for i := range h.Tools {
				if h.Tools[i].ID == id {
					h.Tools[i].Admitted, h.Tools[i].Code, h.Tools[i].Reason = false, CodeDefinitionChanged, reason.Error()
				}
			}
			h.State, h.Reason = Degraded, "the server changed its tools during the task; see tools"
		})
	}
	for name, def := range now {
		if listed[name] || srv.seen[name] {
			continue
		}
		srv.seen[name] = true
		id := authority.MCPTool(srv.cfg.Name, name)
		c.record(ctx, string(id), authority.Decision{Layer: "mcp/" + srv.cfg.Name, RuleID: "builtin.mcp.listed_mid_task",
			Reason: "the server listed this tool during the task; it is decided when the next task opens its catalog"}, def.digest)
	}
	return nil
}

// staleError is the reason tool id fails closed, nil when it does not.
func (c *Catalog) staleError(id authority.ID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stale[id]
}
