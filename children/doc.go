// Package children supervises the local and remote children of one root
// task (depth one): the subagent tool the root model calls, the capacity
// every spawn reserves, the narrowing that keeps a child inside its parent,
// and the handoffs that pass one child's validated result to another.
//
// The package imports neither the root nor a2a nor acp. It takes what runs
// a child as interfaces the root implements: a [Runner] starts a local
// child from a validated, narrowed [Spec] and returns its [Handle]; a
// [RemoteRunner] (nil: spawn_remote is not offered) starts a remote one
// from a [RemoteSpec]. An [ArtifactVerifier] re-checks an artifact handoff
// right before the downstream child starts; [RootVerifier] is the one over
// an *os.Root of the workspace. The start check is not the last: the
// runtime binds the child's workspace reads of the handed path to the
// handed revision, so each read returns those bytes or fails
// artifact_changed.
//
// [Supervisor] is the seam a host can wrap: spawn, spawn_remote, inspect,
// wait and stop. [New] returns the runtime's implementation, a [*Tree] for
// one root, whose [Tree.Close] stops admission, drains the queue, cancels
// the active children and joins every one of them. [Tool] is the subagent
// tool over a Supervisor, a tool catalog the root adds to its own.
//
// Results live outside model history: what a caller gets back is a
// bounded [Snapshot] (state, outcome, accounting, result ID, validation),
// never a child's transcript.
package children
