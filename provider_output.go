package pablo

import (
	"fmt"
	"github.com/pabloagent/pablo/internal/config"
	"strings"

	"github.com/pabloagent/pablo/internal/schema"
)

// OutputRepairSchemaVersion is the schema of an OutputRepair record.
const OutputRepairSchemaVersion = "output-repair-v1"

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

// OutputRepair is the output-repair-v1 record of a task whose deployment
// enables repair.
type OutputRepair struct {
	SchemaVersion      string `json:"schema_version"`
	Status             string `json:"status"`
	Attempts           int    `json:"attempts"`
	ValidationAttempts int    `json:"validation_attempts"`
	FeedbackBytes      int    `json:"feedback_bytes"`
	PreviousErrorCount int    `json:"previous_error_count"`
}

// outputCheck validates a task's final answers against options.output.schema
// (REFERENCE §5.5) and plans the one repair it allows. The two candidate
// answers share max_validation_work and max_output_bytes. It holds one
// task's state; build one per task.
type outputCheck struct {
	schema      *schema.Schema
	repair      bool
	maxFeedback int
	workLeft    uint64
	bytesLeft   int64
	record      schema.Record
	rep         OutputRepair
}

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

// outputSpec returns the deployment's output validation, or nil.
func (d *Deployment) outputSpec() *OutputSpec {
	o := d.Options.Output
	if o.Schema == "" {
		return nil
	}
	return &OutputSpec{Schema: o.Schema, Repair: o.Repair.Enabled, MaxFeedbackBytes: o.Repair.MaxFeedbackBytes,
		MaxValidationWork: o.MaxValidationWork, MaxOutputBytes: d.Options.Limits.MaxOutputBytes}
}

// newOutputCheck returns nil when spec is nil.
func newOutputCheck(spec *OutputSpec) (*outputCheck, error) {
	if spec == nil {
		return nil, nil
	}
	o := spec
	s, err := schema.Compile([]byte(o.Schema), schema.Limits{})
	if err != nil {
		return nil, &ConfigError{Code: config.CodeInvalidValue, Option: "/options/output/schema", Message: err.Error()}
	}
	bytesLeft := o.MaxOutputBytes
	if bytesLeft <= 0 {
		bytesLeft = 1 << 62
	}
	c := &outputCheck{schema: s, repair: o.Repair, maxFeedback: int(o.MaxFeedbackBytes),
		workLeft: uint64(o.MaxValidationWork), bytesLeft: bytesLeft, record: s.UnvalidatedRecord()}
	if c.maxFeedback <= 0 {
		c.maxFeedback = 4096
	}
	if c.workLeft == 0 {
		c.workLeft = schema.DefaultLimits().MaxWork
	}
	c.rep = OutputRepair{SchemaVersion: OutputRepairSchemaVersion, Status: RepairAvailable}
	return c, nil
}

// validate checks one candidate answer and records the result. It reports
// whether the engine should now make the repair call (the first answer was
// invalid and repair is enabled).
func (c *outputCheck) validate(answer string) (repairNow bool) {
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

// valid reports whether the last candidate satisfied the schema.
func (c *outputCheck) valid() bool { return c.record.Status == schema.StatusValid }

// feedback is the repair message appended after the invalid answer: codes
// and paths only (never values), bounded by max_feedback_bytes. Calling it
// marks the repair started.
func (c *outputCheck) feedback() string {
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

// block records that the repair could not run (a ceiling, a cancellation,
// a tool call during repair, ...).
func (c *outputCheck) block() {
	if c.rep.Status == RepairPending || c.rep.Status == RepairStarted || c.rep.Status == RepairAvailable {
		c.rep.Status = RepairBlocked
	}
}

// records returns the task object's output_validation and output_repair
// records (repair only when the deployment enables it).
func (c *outputCheck) records() (schema.Record, *OutputRepair) {
	if !c.repair {
		return c.record, nil
	}
	r := c.rep
	return c.record, &r
}
