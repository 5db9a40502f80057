package pablo

import (
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/output"
)

// OutputSpec asks a runtime to validate every task's final answer against a
// JSON Schema (the bounded subset of REFERENCE §5.5) and, optionally, to
// make one repair call when the first answer is invalid.
type OutputSpec = output.Spec

// OutputRepair is the output-repair-v1 record of a task whose deployment
// enables repair; its Status is one of "available", "pending", "started",
// "not_needed", "succeeded", "failed" and "blocked" (the last four are
// terminal).
type OutputRepair = output.Repair

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
	c, err := output.New(spec)
	if err != nil {
		return nil, &config.Error{Code: config.CodeInvalidValue, Option: "/options/output/schema", Message: err.Error()}
	}
	return c, nil
}
