package ledger

import (
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// ToolResult is what a tool call produced, as a tool catalog reports it and
// the ledger records it. Status is the reference's tool status; Output is
// the JSON value returned to the model (a payload or a recoverable error
// object).
type ToolResult struct {
	Status outcome.ToolStatus
	Output any
	// Rule names the deciding rule of a policy_denied result.
	Rule string
	// Decision is the whole decision of a policy_denied result: the layer
	// and rule that denied the call, for the ledger's record.
	Decision authority.Decision
	// Limit names the limit of a work_limit or output_limit result.
	Limit outcome.LimitKind
	// Code is the failure code of a terminal failure (tool_execution,
	// tool_cleanup, remote_task, ...).
	Code outcome.FailureCode
	// Delivery is how certain it is that a remote effect happened; empty
	// means the work was local and its outcome is known.
	Delivery outcome.Delivery
	// Masked counts the secrets the catalog already masked in Output
	// (an MCP catalog masks its server's credentials); the engine masks
	// the rest and records the sum.
	Masked int
}

// Terminal reports whether the result ends the run: everything but a
// completed call or a recoverable error does.
func (r ToolResult) Terminal() bool {
	return r.Status != outcome.ToolCompleted && r.Status != outcome.ToolRecoverableError
}

// Completed returns a completed result with output.
func Completed(output any) ToolResult {
	return ToolResult{Status: outcome.ToolCompleted, Output: output}
}

// RecoverableError returns a result the model sees as an error object
// {"error": {"code", "message"}} and may recover from.
func RecoverableError(code, message string) ToolResult {
	return ToolResult{Status: outcome.ToolRecoverableError, Output: map[string]any{"error": map[string]any{"code": code, "message": message}}}
}
