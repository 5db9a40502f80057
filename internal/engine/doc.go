// Package engine runs Pablo's tasks: the run engine behind the root's
// Runtime. A task's loop (loop.go) asks the model (modelcall.go, routes in
// route.go and classify.go), passes each proposed tool call through typed
// stages (toolcall.go: resolve, validate, admit, approve, dispatch,
// observe, retain), records every step in the task's one ledger and
// publishes it as an event, compacts the history when its next request is
// due (compaction.go), supervises children on the same ledger (child.go),
// and settles the task with its terminal record.
//
// The package never imports the root. The root's host-facing types
// (ToolCatalog, Approver, TaskRequest, TaskObject, the sealed Router) are
// converted to this package's own at the boundary (Catalog, Approver,
// Request, Result, *Route), so what a host supplies reaches the engine
// with its optional capabilities (HealthReporter, SandboxReporter,
// ApprovalChannel, io.Closer) intact.
package engine
