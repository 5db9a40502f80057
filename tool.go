package pablo

import (
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// A host's own tool needs only this package: its catalog lists ToolSpecs,
// receives ToolInvocations and returns ToolResults. The names are the
// authority's and the ledger's types, so a tool written against either
// package works unchanged.
type (
	// ToolSpec declares a tool: its capability ID, the description the
	// model sees, its input schema and the resources a call names (see
	// [authority.ToolSpec]).
	ToolSpec = authority.ToolSpec
	// ToolInvocation is one call the authority and the contract accepted:
	// the tool, its validated arguments and the resources it names (see
	// [authority.Call]).
	ToolInvocation = authority.Call
	// ToolResult is what a call produced: its status, its output and the
	// failure code or limit that ended it (see [ledger.ToolResult]).
	ToolResult = ledger.ToolResult
	// ToolStatus is a tool result's status, the reference's vocabulary
	// (see [outcome.ToolStatus]).
	ToolStatus = outcome.ToolStatus
)

// ToolCompleted returns a completed result with output.
func ToolCompleted(output any) ToolResult { return ledger.Completed(output) }

// RecoverableToolError returns a result the model sees as an error object
// {"error": {"code", "message"}} and may recover from: the task goes on.
func RecoverableToolError(code, message string) ToolResult {
	return ledger.RecoverableError(code, message)
}
