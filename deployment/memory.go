package deployment

// MemoryReviewOptions say how to read a proposed memory patch.
type MemoryReviewOptions struct {
	// Kinds and Paths are the scope the patch was proposed under:
	// memory.update.propose writes its patch against the records as the
	// proposer's grant sees them. Both empty: the deployment's
	// options.memory.grants.propose_update. A child's patch, proposed
	// under a grant its memory scope narrowed, names that narrower scope.
	Kinds []string
	Paths []string
}

// MemoryReview is a proposed memory patch as a reviewer who sees the
// whole memory reads it: the host, or a person it asks, never the model.
// It is what the proposer could not be told, since a proposer's answers
// never depend on the records its grant hides.
type MemoryReview struct {
	// Base is the memory commit the patch was proposed against (the
	// proposing task's pin).
	Base string `json:"base"`
	// Changes are the records the patch adds, edits or deletes.
	Changes []MemoryChange `json:"changes"`
	// Conflicts are every problem at full scope: the ontology's
	// violations (when one is configured), IDs and paths any record
	// already holds, and edges a deletion would leave dangling, records
	// hidden from the proposer included. Empty when there is none.
	Conflicts []MemoryConflict `json:"conflicts"`
	// Patch is the proposal carried onto the files of Base, keeping the
	// edges and associations the proposer could not see: `git am` or
	// `git apply` takes it on Base. Empty when a path conflict leaves
	// nothing to write.
	Patch string `json:"patch,omitempty"`
	// PatchSHA256 is Patch's digest, "sha256:" and hex; empty with Patch.
	PatchSHA256 string `json:"patch_sha256,omitempty"`
	// Files are the repository paths Patch changes.
	Files []string `json:"files"`
}

// MemoryChange is one record a proposed patch adds, edits or deletes.
type MemoryChange struct {
	Op   string `json:"op"` // add, edit or delete
	ID   string `json:"id"`
	Kind string `json:"kind,omitempty"`
	Path string `json:"path"`
}

// MemoryConflict is one problem a reviewed proposal has.
type MemoryConflict struct {
	// Code is one of memory.ontology.validate's violation codes
	// (unknown_kind, missing_field, unknown_edge_kind, edge_endpoint,
	// dangling_edge, id_collision, ...) or path_taken.
	Code   string `json:"code"`
	ID     string `json:"id,omitempty"`
	Path   string `json:"path,omitempty"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}
