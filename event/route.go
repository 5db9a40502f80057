package event

// RouteSchemaVersion is the schema of a RouteAttempt record.
const RouteSchemaVersion = "model-route-v1"

// RouteAttempt is one attempt of a routed model call, in the shape of the
// model_route record of events: which entry served, why it was selected,
// and how the attempt ended.
type RouteAttempt struct {
	SchemaVersion string `json:"schema_version"`
	Route         string `json:"route"`
	Entry         string `json:"entry"`
	EntryIndex    int    `json:"entry_index"`
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	// Operation is the 1-based logical operation (model turn) of the task,
	// as a decimal string.
	Operation string `json:"operation"`
	// Attempt is 1-based within the operation.
	Attempt int `json:"attempt"`
	// SelectionReason is initial, sticky, fallback, complexity or retry
	// (the same entry again, after a wait: options.model.retry).
	SelectionReason string `json:"selection_reason"`
	// Phase is started before dispatch and finished after.
	Phase      string  `json:"phase"`
	Dispatched bool    `json:"dispatched"`
	Delivery   *string `json:"delivery"`
	Status     *string `json:"status"`
	// FailureCode and RetryClass are set when the attempt failed.
	FailureCode *string `json:"failure_code"`
	Limit       *string `json:"limit"`
	RetryClass  *string `json:"retry_class"`
	// RetryInMS, on a failed attempt whose entry is tried again, is the
	// wait in milliseconds before that attempt (absent otherwise).
	RetryInMS *int64 `json:"retry_in_ms,omitempty"`
}
