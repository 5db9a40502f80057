// Package ledger is the single ledger of a root task: it orders every event,
// charges every model and tool call against the ceilings, persists the task's
// durable state, and after a restart tells completed actions from unknown
// outcomes and retryable operations.
//
// One [*Root] exists per root task and is shared by its children. The
// runtime uses it through the [Ledger] interface, so a host may wrap it or
// supply its own (pablo.RuntimeOptions.NewLedger); a tool catalog is given
// only the [Recorder] part, to add its decisions to the task's scope. Every
// event gets the root's global RootSeq and its agent's own Seq, both from 1.
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
// outcome.LimitKind and which matches [ErrLimit].
//
// # Durability
//
// Records go to a [Store]: [NewMemoryStore] for tests, or the embedded bbolt
// store from [OpenBolt], which groups concurrent appends into one transaction
// and fsync. A barrier is one [Store.Append]: one committed store
// transaction (a bbolt commit is two fdatasyncs). The root accepts records
// in memory and hands them to the store only at a barrier, and there are
// exactly these:
//
//   - [Root.Dispatch]: what must be durable before a model or tool request
//     leaves the process (the call's admission and its dispatch, with every
//     record accepted before them);
//   - [Root.SettleToolCall]: a tool call's settlement, with its result;
//   - [Root.Finish]: an agent's terminal record;
//   - [Root.Flush], and an accepting method that finds FlushEvery records
//     waiting (a bound on memory, not a durability point).
//
// So a tool call spends two barriers, a model call one (its settlement is
// durable with the next barrier), and a task one more for its terminal
// record. Every other method (NewRoot, StartAgent, Append, ReserveModelCall,
// AdmitToolCall, SettleModelCall, RecordDecision, PutResult) only accepts
// its records: a crash may lose those accepted after the last barrier, and
// because the lost records are always a suffix of the task's, recovery still
// reads a consistent task. A call is recorded as dispatched at a barrier
// before it leaves the process, so [Recover] can report a
// dispatched-but-unsettled call as an unknown outcome, never to be replayed;
// a call whose admission survived without its dispatch never left the
// process and is retryable; a call lost entirely never left it either. A
// model call's lost settlement reads as an unknown outcome, charged as such.
//
// A record can also be volatile, on a [VolatileStore] (both stores here
// are): visible to every later reader on this host once written, even after
// the writer is killed, but not guaranteed across a power loss or an OS
// crash. A volatile write costs no fsync and is not a barrier. It serves
// records that must outlive the host process, not the machine:
// [Root.RecordProcessGroup] writes a process group the runtime started,
// with every record accepted before it, volatile before the group is given
// any work (no process survives a reboot, and a reaper refuses a record of
// another boot), so a tool call that starts a process still spends two
// barriers; the next barrier makes the records durable. What a reader sees
// of a task is still a prefix of its records: the durable ones and the
// volatile ones that continue them. The bolt store keeps volatile records in
// a sidecar file beside the database (see [Bolt.AppendVolatile]), never in a
// bbolt commit without its fsyncs, which a power loss could tear.
//
// A store that several processes share (ledger/postgres) leases each task
// to one of them: it implements the optional [LeaseStore], refuses a write
// whose fencing token is no longer the task's current one with an error
// matching [ErrLeaseLost] (which the root latches like any store failure),
// and [Recover] refuses a task whose lease is live ([ErrLeaseLive]).
// ledger/ledgertest holds the conformance suite every store passes.
//
// # What needs attention
//
// Every store here keeps an index of what needs attention (the optional
// [IndexedStore]): the tasks not yet terminal, the process groups they
// started that no host has reaped, and each session's tasks, written in the
// transaction of the records that change it. [LiveProcessGroups] (what a
// host's start-up reaps), [PendingTasks] and [SessionTasks] read it, and
// scan every task on a store without one; [RecoverEach] and [EachTask] walk
// a whole store a page of task IDs at a time (the optional [TaskPager]),
// holding one task's records at a time.
//
// Results are immutable and content-addressed: [Root.PutResult] stores the
// [Canonical] JSON of a value under "sha256:<hex>".
//
// "The reference" here is Pablo's original implementation, in Rust:
// https://github.com/calebjohn24/pablo. Where this package differs from it
// on purpose, docs/differences.md says so.
package ledger
