package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger"
)

// A server that says its tools changed (notifications/tools/list_changed)
// has them listed again before the next call: a tool whose definition
// changed fails closed for the rest of the task, pinned or not, a tool
// listed for the first time is recorded and not admitted, and the health
// report and the ledger say so. Tools that did not change still run.
func TestListChangedRedecidesAndAChangedToolFailsClosed(t *testing.T) {
	t.Parallel()
	for _, pinned := range []bool{false, true} {
		srv := faultStdio(t, "live", "relist")
		if pinned {
			c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv)})
			for _, st := range c.Health()[0].Tools {
				if st.Name == "echo" {
					srv.Pins = map[string]string{"echo": st.Digest}
				}
			}
		}
		store := ledger.NewMemoryStore()
		root, err := ledger.NewRoot(context.Background(), ledger.Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		c := open(t, Options{Servers: []Server{srv}, Authority: allowAll(t, srv), Ledger: root, AgentID: root.RootAgentID()})
		ctx := context.Background()
		if _, err := c.CallTool(ctx, "mcp/live/echo", json.RawMessage(`{"message":"before"}`)); err != nil {
			t.Fatal(err)
		}
		if res, err := c.CallTool(ctx, "mcp/live/mutate", json.RawMessage(`{}`)); err != nil || strings.Join(res.Text, "") != "mutated" {
			t.Fatalf("mutate: %+v %v", res, err)
		}
		_, err = c.CallTool(ctx, "mcp/live/echo", json.RawMessage(`{"message":"after"}`))
		if !errors.Is(err, ErrDefinitionChanged) {
			t.Fatalf("pinned %v: the changed tool ran: %v", pinned, err)
		}
		var dc *DefinitionChangedError
		if !errors.As(err, &dc) || dc.Tool != "mcp/live/echo" {
			t.Fatalf("err = %v, want a *DefinitionChangedError naming the tool", err)
		}
		if _, err := c.CallTool(ctx, "mcp/live/fail", json.RawMessage(`{}`)); err != nil {
			t.Fatalf("an unchanged tool: %v", err)
		}
		if _, err := c.CallTool(ctx, "mcp/live/extra", json.RawMessage(`{}`)); err == nil {
			t.Fatal("a tool listed mid-task was admitted")
		}
		h := c.Health()[0]
		changed := false
		for _, st := range h.Tools {
			changed = changed || (st.ID == "mcp/live/echo" && !st.Admitted && st.Code == CodeDefinitionChanged)
		}
		if h.State != Degraded || !changed {
			t.Fatalf("health %+v", h)
		}
		root.Flush(ctx)
		recs, _ := store.Records(ctx, root.ID())
		blob := string(mustJSON(recs))
		if !strings.Contains(blob, "builtin.mcp.mcp_definition_changed") || !strings.Contains(blob, "builtin.mcp.listed_mid_task") {
			t.Fatalf("the change is not recorded: %s", blob)
		}
	}
}
