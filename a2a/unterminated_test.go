package a2a

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// An event no blank line completes is not delivered (internal/sse's rule,
// the same through a2a, mcp and the providers): a stream whose last event,
// the one that would settle the task as completed, lacks its blank line is
// a stream lost before the task settled, not a completed child.
func TestUnterminatedLastEventIsNotDelivered(t *testing.T) {
	t.Parallel()
	p := newFaultPeer(t)
	p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
		if req.Method == "CancelTask" {
			result(w, req, task("t1", "c1", "TASK_STATE_CANCELED")["task"])
			return
		}
		send := sse(w, req)
		send(task("t1", "c1", "TASK_STATE_WORKING"))
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": task("t1", "c1", "TASK_STATE_COMPLETED", textArtifact("a1", "done"))})
		io.WriteString(w, "data: "+string(b)+"\n")
	})
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}})
	h := run(t, r, spec("peer", "x", true))
	o := h.Result().Outcome
	if o.Status == outcome.Completed || o.Code != outcome.FailRemoteTask || !strings.Contains(o.Reason, "stream ended") {
		t.Fatalf("an unterminated last event settled the child: %+v", o)
	}
}
