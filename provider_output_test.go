package pablo

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/schema"
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

func TestOutputValidOnFirstAnswerNeedsNoRepair(t *testing.T) {
	c, err := newOutputCheck(outputDeployment(t, "[options.output.repair]\nenabled = true\n").outputSpec())
	if err != nil || c == nil {
		t.Fatal(err)
	}
	if c.validate(`{"paid":true,"invoice":"INV-1042"}`) || !c.valid() {
		t.Fatal("a valid answer needs no repair")
	}
	rec, rep := c.records()
	if rec.Status != schema.StatusValid || rep.Status != RepairNotNeeded || rep.ValidationAttempts != 1 || rep.Attempts != 0 {
		t.Fatalf("records %+v %+v", rec, rep)
	}
}

func TestOutputOneRepairThenSucceeded(t *testing.T) {
	c, _ := newOutputCheck(outputDeployment(t, "[options.output.repair]\nenabled = true\nmax_feedback_bytes = 512\n").outputSpec())
	if !c.validate(`{"paid":"yes","invoice":"INV-1042","secret":"hunter2"}`) {
		t.Fatal("an invalid first answer asks for the repair")
	}
	fb := c.feedback()
	if len(fb) > 512 || strings.Contains(fb, "hunter2") || strings.Contains(fb, "yes") || !strings.Contains(fb, "schema_violation") {
		t.Fatalf("feedback must hold codes and paths only, bounded: %q", fb)
	}
	if c.validate(`{"paid":true,"invoice":"INV-1042"}`) {
		t.Fatal("only one repair")
	}
	rec, rep := c.records()
	// succeeded implies valid, attempts=1 and validation_attempts=2.
	if rec.Status != schema.StatusValid || rep.Status != RepairSucceeded || rep.Attempts != 1 || rep.ValidationAttempts != 2 || rep.FeedbackBytes != len(fb) || rep.PreviousErrorCount == 0 {
		t.Fatalf("records %+v %+v", rec, rep)
	}
}

func TestOutputSecondInvalidAnswerFails(t *testing.T) {
	c, _ := newOutputCheck(outputDeployment(t, "[options.output.repair]\nenabled = true\n").outputSpec())
	c.validate(`not json`)
	c.feedback()
	if c.validate(`{"paid":1}`) || c.valid() {
		t.Fatal("a second invalid answer is final")
	}
	rec, rep := c.records()
	if rec.Status != schema.StatusInvalid || len(rec.Diagnostics) == 0 || rep.Status != RepairFailed {
		t.Fatalf("records %+v %+v", rec, rep)
	}
}

func TestOutputWithoutRepairHasNoRepairRecord(t *testing.T) {
	c, _ := newOutputCheck(outputDeployment(t, "").outputSpec())
	if c.validate(`{}`) {
		t.Fatal("no repair when it is not enabled")
	}
	rec, rep := c.records()
	if rec.Status != schema.StatusInvalid || rep != nil || rec.Diagnostics[0].Code != schema.CodeSchemaViolation {
		t.Fatalf("records %+v %+v", rec, rep)
	}
}

// The two candidates share max_validation_work: at exactly the sum of
// their work both are validated; one less and the second is validation_work.
func TestOutputCandidatesShareTheWorkBound(t *testing.T) {
	first := `{"paid":"no","invoice":"INV-1042"}`
	second := `{"paid":true,"invoice":"INV-1042"}` + strings.Repeat(" ", 40)
	for _, slack := range []uint64{0, 1} {
		c, _ := newOutputCheck(outputDeployment(t, "[options.output.repair]\nenabled = true\n").outputSpec())
		c.workLeft = c.schema.Work(len(first)) + c.schema.Work(len(second)) - slack
		c.validate(first)
		c.feedback()
		c.validate(second)
		rec, _ := c.records()
		if slack == 0 && rec.Status != schema.StatusValid {
			t.Fatalf("at the bound: %+v", rec)
		}
		if slack == 1 && (rec.Status != schema.StatusInvalid || rec.Diagnostics[0].Code != schema.CodeValidationWork) {
			t.Fatalf("one past the bound: %+v", rec)
		}
	}
}

func TestOutputBlockedRepair(t *testing.T) {
	c, _ := newOutputCheck(outputDeployment(t, "[options.output.repair]\nenabled = true\n").outputSpec())
	c.validate(`[]`)
	c.block()
	_, rep := c.records()
	if rep.Status != RepairBlocked {
		t.Fatalf("status %s", rep.Status)
	}
}

// The two candidates share max_output_bytes too.
func TestOutputCandidatesShareTheOutputBytes(t *testing.T) {
	first, second := `{"paid":"no"}`, `{"paid":true,"invoice":"I"}`
	for _, slack := range []int64{0, 1} {
		c, _ := newOutputCheck(outputDeployment(t, "[options.output.repair]\nenabled = true\n").outputSpec())
		c.bytesLeft = int64(len(first)+len(second)) - slack
		c.validate(first)
		c.feedback()
		c.validate(second)
		rec, _ := c.records()
		if (slack == 0) != (rec.Status == schema.StatusValid) || slack == 1 && rec.Diagnostics[0].Code != schema.CodeJSONBytes {
			t.Fatalf("slack %d: %+v", slack, rec)
		}
	}
}
