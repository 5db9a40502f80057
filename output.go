package pablo

import (
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/output"
)

// OutputSpec asks a runtime to validate every task's final answer against a
// JSON Schema (the bounded subset of REFERENCE §5.5) and, optionally, to
// make one repair call when the first answer is invalid.
type OutputSpec struct {
	// Schema is the JSON Schema text. Required.
	Schema string
	// Repair allows one repair call.
	Repair bool
	// MaxFeedbackBytes bounds the repair message (0: 4096).
	MaxFeedbackBytes int64
	// MaxValidationWork bounds validation work across both candidates (0:
	// 16,777,216).
	MaxValidationWork int64
	// MaxOutputBytes bounds both candidates together (0: unbounded).
	MaxOutputBytes int64
}

// spec is s as the engine takes it, nil for nil.
func (s *OutputSpec) spec() *output.Spec {
	if s == nil {
		return nil
	}
	c := output.Spec(*s)
	return &c
}

// OutputRepair is the output-repair-v1 record of a task whose deployment
// enables repair.
type OutputRepair struct {
	SchemaVersion string `json:"schema_version"`
	// Status is one of "available", "pending", "started", "not_needed",
	// "succeeded", "failed" and "blocked" (the last four are terminal).
	Status string `json:"status"`
	// Attempts counts repair calls made (at most one), ValidationAttempts
	// the candidate answers validated.
	Attempts           int `json:"attempts"`
	ValidationAttempts int `json:"validation_attempts"`
	// FeedbackBytes is the size of the repair message, and
	// PreviousErrorCount the validation errors of the answer it repaired.
	FeedbackBytes      int `json:"feedback_bytes"`
	PreviousErrorCount int `json:"previous_error_count"`
}

// outputRepair is the engine's record as the task object's, nil for nil.
func outputRepair(r *output.Repair) *OutputRepair {
	if r == nil {
		return nil
	}
	c := OutputRepair(*r)
	return &c
}

// outputSpec returns the deployment's output validation, or nil.
func (d *Deployment) outputSpec() *OutputSpec {
	o := d.c.Options.Output
	if o.Schema == "" {
		return nil
	}
	return &OutputSpec{Schema: o.Schema, Repair: o.Repair.Enabled, MaxFeedbackBytes: o.Repair.MaxFeedbackBytes,
		MaxValidationWork: o.MaxValidationWork, MaxOutputBytes: d.c.Options.Limits.MaxOutputBytes}
}

// newOutputCheck is output.New with a schema outside the subset reported
// as the deployment's error at /options/output/schema.
func newOutputCheck(spec *OutputSpec) (*output.Check, error) {
	c, err := output.New(spec.spec())
	if err != nil {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "/options/output/schema", Message: err.Error()}
	}
	return c, nil
}
