package pablo

import (
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/internal/engine"
)

// Approver answers approval requests: see [approval.Approver]. A task's
// approver is the one its [TaskRequest] names, or the runtime's; the
// engine calls it directly, so an approver a host wraps behaves as the
// one it wraps.
type Approver = approval.Approver

// IdempotencyKey is the stable key of one side-effecting call: derived
// from the root task, the agent and the call ID (SHA-256 over the three,
// each followed by a NUL byte; "idem_" and the hex of the first 16 bytes),
// so a retried delivery of the same call carries the same key and a server
// or script that honours it can apply the call once. The ledger records it
// on the call's admission record. MCP calls send it in _meta under
// mcp.IdempotencyMetaKey ("io.github.pabloagent/idempotency-key");
// shell.run in the environment variable PABLO_IDEMPOTENCY_KEY.
func IdempotencyKey(taskID, agentID, callID string) string {
	return engine.IdempotencyKey(taskID, agentID, callID)
}
