// Package output validates a task's final answer against the deployment's
// output schema (options.output, REFERENCE §5.5) and plans the one repair
// call it allows.
//
// A [Check] holds one task's state: build one per task with [New]. The run
// loop asks [Check.Validate] of the first answer; when that answer is
// invalid and repair is enabled, it sends [Check.Feedback] (codes and
// paths, never values) and validates the second answer, which is final.
// The two candidates share one validation-work and one output-byte
// budget. [Check.Records] are the task object's output_validation and
// output_repair records.
package output

import (
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/schema"
)

// RepairSchemaVersion is the schema of a [Repair] record.
const RepairSchemaVersion = "output-repair-v1"

// The output-repair-v1 statuses. NotNeeded, Succeeded, Failed and Blocked
// are terminal.
const (
	RepairAvailable = "available"
	RepairPending   = "pending"
	RepairStarted   = "started"
	RepairNotNeeded = "not_needed"
	RepairSucceeded = "succeeded"
	RepairFailed    = "failed"
	RepairBlocked   = "blocked"
)

// Repair is the output-repair-v1 record of a task whose deployment enables
// repair.
type Repair struct {
	SchemaVersion      string `json:"schema_version"`
	Status             string `json:"status"`
	Attempts           int    `json:"attempts"`
	ValidationAttempts int    `json:"validation_attempts"`
	FeedbackBytes      int    `json:"feedback_bytes"`
	PreviousErrorCount int    `json:"previous_error_count"`
}

// Spec asks a runtime to validate every task's final answer against a
// JSON Schema (the bounded subset of REFERENCE §5.5) and, optionally, to
// make one repair call when the first answer is invalid.
type Spec struct {
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

// Check validates one task's final answers against a [Spec]'s schema. The
// two candidate answers share max_validation_work and max_output_bytes.
type Check struct {
	schema      *schema.Schema
	repair      bool
	maxFeedback int
	workLeft    uint64
	bytesLeft   int64
	record      schema.Record
	rep         Repair
}

// New compiles spec's schema into a fresh Check; it returns nil when spec
// is nil. A schema outside the subset fails with the *schema.CompileError.
func New(spec *Spec) (*Check, error) {
	if spec == nil {
		return nil, nil
	}
	s, err := schema.Compile([]byte(spec.Schema), schema.Limits{})
	if err != nil {
		return nil, err
	}
	bytesLeft := spec.MaxOutputBytes
	if bytesLeft <= 0 {
		bytesLeft = 1 << 62
	}
	c := &Check{schema: s, repair: spec.Repair, maxFeedback: int(spec.MaxFeedbackBytes),
		workLeft: uint64(spec.MaxValidationWork), bytesLeft: bytesLeft, record: s.UnvalidatedRecord()}
	if c.maxFeedback <= 0 {
		c.maxFeedback = 4096
	}
	if c.workLeft == 0 {
		c.workLeft = schema.DefaultLimits().MaxWork
	}
	c.rep = Repair{SchemaVersion: RepairSchemaVersion, Status: RepairAvailable}
	return c, nil
}

// Validate checks one candidate answer and records the result. It reports
// whether the engine should now make the repair call (the first answer was
// invalid and repair is enabled).
func (c *Check) Validate(answer string) (repairNow bool) {
	c.rep.ValidationAttempts++
	var res schema.Result
	switch {
	case int64(len(answer)) > c.bytesLeft:
		res = schema.Result{Diagnostics: []schema.Diagnostic{{Code: schema.CodeJSONBytes}}}
	default:
		c.bytesLeft -= int64(len(answer))
		if c.workLeft == 0 || c.schema.Work(len(answer)) > c.workLeft {
			res = schema.Result{Diagnostics: []schema.Diagnostic{{Code: schema.CodeValidationWork}}}
			c.workLeft = 0
			break
		}
		res = c.schema.WithLimits(schema.Limits{MaxWork: c.workLeft}).Validate([]byte(answer))
		c.workLeft -= min(res.Work, c.workLeft)
	}
	c.record = c.schema.Record(res)
	second := c.rep.Attempts == 1
	switch {
	case res.Valid && second:
		c.rep.Status = RepairSucceeded
	case res.Valid:
		c.rep.Status = RepairNotNeeded
	case second:
		c.rep.Status = RepairFailed
	case c.repair:
		c.rep.Status = RepairPending
		c.rep.PreviousErrorCount = len(res.Diagnostics)
		return true
	}
	return false
}

// Valid reports whether the last candidate satisfied the schema.
func (c *Check) Valid() bool { return c.record.Status == schema.StatusValid }

// Feedback is the repair message appended after the invalid answer: codes
// and paths only (never values), bounded by max_feedback_bytes. Calling it
// marks the repair started.
func (c *Check) Feedback() string {
	var b strings.Builder
	b.WriteString("Your final answer does not satisfy the required JSON Schema. Answer again with only a JSON value that satisfies it; do not call tools. Problems:\n")
	for _, d := range c.record.Diagnostics {
		line := fmt.Sprintf("- %s at instance %q (schema %q)\n", d.Code, d.InstancePath, d.SchemaPath)
		if b.Len()+len(line) > c.maxFeedback {
			break
		}
		b.WriteString(line)
	}
	out := b.String()
	if len(out) > c.maxFeedback {
		out = out[:c.maxFeedback]
	}
	c.rep.Status, c.rep.Attempts, c.rep.FeedbackBytes = RepairStarted, 1, len(out)
	return out
}

// Block records that the repair could not run (a ceiling, a cancellation,
// a tool call during repair, ...).
func (c *Check) Block() {
	if c.rep.Status == RepairPending || c.rep.Status == RepairStarted || c.rep.Status == RepairAvailable {
		c.rep.Status = RepairBlocked
	}
}

// Records returns the task object's output_validation and output_repair
// records (repair only when the deployment enables it).
func (c *Check) Records() (schema.Record, *Repair) {
	if !c.repair {
		return c.record, nil
	}
	r := c.rep
	return c.record, &r
}
