// Package memory reads the company-brain memory of seed 002: a git
// repository of Markdown records with YAML frontmatter (the graph) and
// free-form Markdown (the docs), always at one commit and never in a work
// tree.
//
// A Store opens the repository with go-git (no git binary at run time).
// Resolve turns the configured ref into a Pin, the commit every read of a
// task happens at; a newer commit on the ref changes nothing for a task
// already pinned. Index builds the graph of a commit once and keeps it in a
// Cache keyed by commit and configuration, shared by every task on it.
//
// Concurrency: a Store is one repository's reader for every task of a
// runtime. Its object reads (trees, blobs, refs) take the Store's lock,
// because go-git's pack and index readers share file handles and decoder
// state; an Index is immutable once built and is read by every task on
// its commit without a lock. Two Stores on one repository share nothing
// but their Cache, so each needs only its own lock.
//
// Reads are bounded and refuse what a hostile repository could use:
// symlinks and submodules are never followed (a typed ErrUnsafeEntry on a
// direct read, a Problem in the index); a blob over Limits.MaxBlobBytes is
// never read; directories past Limits.MaxTreeDepth and walks past
// Limits.MaxEntries stop; every walk honours its context.
//
// Frontmatter is read strictly: go.yaml.in/yaml/v3 parses it into a Node
// tree, and the walk refuses anchors, aliases, tags, merge keys, complex
// and duplicate keys (at any depth), directives and document markers, and
// bounds its bytes, nodes and depth. Every scalar stays the text it is
// written as. The keys id and kind are required; owner, repo and stack are
// strings; associations is a list of record IDs; edges maps an edge kind to
// a record ID or a list of IDs; every other key is a free field.
//
// A Scope (kinds and paths, from a grant) bounds every answer: a record
// outside it is never returned, counted or named, and edges or
// associations that point at one are removed from what the caller sees.
// A bounded scope (one that leaves out a kind or part of a graph path)
// sees every record as rendered from that view, never its blob, in every
// tool (text, blob ID, patch base, diff): whether a record names a hidden
// one never changes how it is shown, so its formatting is no tell.
//
// Propose writes nothing: it returns a `git format-patch` mail against the
// pin, with its SHA-256, for the caller to store as an artifact. An
// Ontology validates proposals: kinds, required fields, edge kinds and
// their endpoints, dangling edges and ID collisions.
//
// A proposal is a change request, answered from the proposer's scope
// alone: a record outside it that holds a proposed path or ID, or refers
// to a deleted record, changes nothing in the proposer's answer (no
// oracle for hidden records), and a record the proposer sees whole only
// through its scope is proposed against as it sees it. Review, for a
// reviewer with full scope, reports those conflicts and carries the patch
// onto the pinned blobs.
package memory
