// Package ledger is the single ledger of a root task: it orders every event,
// charges every model and tool call against the ceilings, persists the task's
// durable state, and after a restart tells completed actions from unknown
// outcomes and retryable operations.
//
// One [*Root] exists per root task and is shared by its children (hosts see it
// through the small [Ledger] interface and may wrap it). Every event gets the
// root's global RootSeq and its agent's own Seq, both from 1.
//
// # Accounting
//
// Each agent has counters; every charge also lands on each ancestor, so the
// root's [Accounting] is the task aggregate and a child's own [Limits] apply
// in addition to the root's. Admission is check-and-reserve under one mutex,
// all or nothing across the ceilings it touches, so concurrency can never
// overshoot a ceiling:
//
//   - a model call is reserved by [Root.ReserveModelCall], counted at
//     [Root.Dispatch], settled once by [Root.SettleModelCall];
//   - a tool call is admitted with its authority decision by
//     [Root.AdmitToolCall], counted at Dispatch, settled once by
//     [Root.SettleToolCall];
//   - a call settled before dispatch counts nothing;
//   - token charge = input + output tokens (cache fields are subsets);
//   - hard token and cost ceilings need an attested per-call bound, whose full
//     amount is reserved before dispatch and settled with the actual when
//     known; the reservation is kept when the actual is unknown or delivery is
//     uncertain; a proven not_sent releases to zero but still counts the call;
//     an actual above the bound is charged and reported as a [*BoundError].
//
// A refused admission returns a [*LimitError] whose Kind is the reference's
// LimitKind and which matches [ErrLimit].
//
// # Durability
//
// Records go to a [Store]: [NewMemoryStore] for tests, or the embedded bbolt
// store from [OpenBolt], which groups concurrent appends into one transaction
// and fsync. Call transitions, decisions, results and finishes are durable
// when their method returns; events are batched until the next such barrier
// or [Root.Flush]. A call is recorded as dispatched before it leaves the
// process, so [Recover] can report a dispatched-but-unsettled call as an
// unknown outcome, never to be replayed, and an admitted-only call as
// retryable.
//
// Results are immutable and content-addressed: [Root.PutResult] stores the
// [Canonical] JSON of a value under "sha256:<hex>".
//
// "The reference" here is Pablo's original implementation, in Rust:
// https://github.com/calebjohn24/pablo. Where this package differs from it
// on purpose, docs/differences.md says so.
package ledger
