package pablo

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/output"
)

const answerSchema = `{"type":"object","properties":{"paid":{"type":"boolean"},"invoice":{"type":"string","maxLength":16}},"required":["paid","invoice"],"additionalProperties":false}`

func outputDeployment(t *testing.T, extra string) *Deployment {
	t.Helper()
	doc := "schema_version = 1\n[options.model]\nprovider = \"openai_compatible\"\nid = \"m\"\nendpoint = \"https://models.example/v1/chat/completions\"\n" +
		"[options.output]\nschema = '" + answerSchema + "'\n" + extra
	d, err := loadString(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// options.output and limits.max_output_bytes become the runtime's
// OutputSpec field for field.
func TestOutputSpecIsTheDeploymentsOutputOptions(t *testing.T) {
	d := outputDeployment(t, "max_validation_work = 9000\n[options.output.repair]\nenabled = true\nmax_feedback_bytes = 512\n[options.limits]\nmax_output_bytes = 4096\n")
	got := d.outputSpec()
	want := OutputSpec{Schema: answerSchema, Repair: true, MaxFeedbackBytes: 512, MaxValidationWork: 9000, MaxOutputBytes: 4096}
	if got == nil || *got != want {
		t.Fatalf("spec %+v, want %+v", got, want)
	}
	if d := outputDeployment(t, ""); d.outputSpec().Repair {
		t.Fatal("repair is off unless enabled")
	}
}

// A runtime refuses an output schema outside the subset as a deployment
// error at /options/output/schema.
func TestOutputSchemaOutsideTheSubsetIsAConfigError(t *testing.T) {
	_, err := newOutputCheck(&OutputSpec{Schema: `{"type":"string","pattern":"^a"}`})
	var ce *deployment.Error
	if !errors.As(err, &ce) || ce.Code != config.CodeInvalidValue || ce.Option != "/options/output/schema" || !errors.Is(err, ErrConfig) {
		t.Fatalf("error %v", err)
	}
}

// The task object's output_repair record is the engine's, key for key: the
// root's OutputRepair converts field for field (the compiler holds the
// fields) and spells every JSON key the same (this test holds the tags).
func TestOutputRepairRecordIsTheEngines(t *testing.T) {
	rec := &output.Repair{SchemaVersion: "output-repair-v1", Status: output.RepairStarted, Attempts: 1, ValidationAttempts: 2, FeedbackBytes: 300, PreviousErrorCount: 4}
	want, _ := json.Marshal(rec)
	got, _ := json.Marshal(outputRepair(rec))
	if string(got) != string(want) {
		t.Errorf("task object's record %s, engine's %s", got, want)
	}
	if outputRepair(nil) != nil || (*OutputSpec)(nil).spec() != nil {
		t.Error("an absent record or spec must stay absent")
	}
}
