package event

// Resume says how a task continued after the host that ran it stopped
// (Runtime.Resume): the run.resumed event and the task object carry it.
// The call lists name Pablo's call IDs ("call_T_I") of the agent's tool
// calls (the task object's: the root's; a continued child's run.resumed:
// the child's), as the ledger recorded them before the resume.
type Resume struct {
	// Attempt numbers the hosts that ran the task: 2 on its first resume.
	Attempt int `json:"attempt"`
	// Fingerprint is the deployment fingerprint the task started under;
	// ResumedUnder the one this resume runs under. They may differ: every
	// call the resume decides is decided under ResumedUnder.
	Fingerprint  string `json:"fingerprint,omitempty"`
	ResumedUnder string `json:"resumed_under,omitempty"`
	// DowntimeMS is the time between the task's last record and the
	// resume. Unless NewDeadline is set it counted against the task's
	// duration ceiling, which is measured from the original start.
	DowntimeMS  uint64 `json:"downtime_ms"`
	NewDeadline bool   `json:"new_deadline,omitempty"`
	// Completed are the calls settled before the stop: their recorded
	// results are used and nothing is sent again.
	Completed []string `json:"completed"`
	// Retried are the calls admitted and provably never dispatched: each
	// is decided again under the current deployment and authority (an
	// approval asked again) and, when allowed, dispatched with its
	// original idempotency key.
	Retried []string `json:"retried"`
	// Unknown are the calls dispatched and never settled: never run again;
	// the model gets an unknown_outcome result, or the host's policy
	// (options.resume.unknown) asks or ends the task.
	Unknown []string `json:"unknown"`
	// ResentModelCalls counts the model calls in flight at the stop: each
	// is settled as may_have_been_sent (charged its bound, or unknown) and
	// its request is sent again, charged again.
	ResentModelCalls uint64 `json:"resent_model_calls"`
}
