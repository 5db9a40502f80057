// Package compaction holds the pure parts of context compaction
// (REFERENCE §5.6): measuring and estimating a request, deciding when a
// request is due for a summary, choosing which messages a summary replaces
// and which stay verbatim, building the summary request, validating the
// summary that comes back, and the vocabulary of the compaction-v1 record
// (triggers and reasons).
//
// Nothing here calls a model, reads a clock or holds state beyond the
// values its callers own; the run loop in the root (compaction.go) wires
// these functions to the ledger, the events and the model.
package compaction
