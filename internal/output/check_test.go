package output

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/schema"
)

const answerSchema = `{"type":"object","properties":{"paid":{"type":"boolean"},"invoice":{"type":"string","maxLength":16}},"required":["paid","invoice"],"additionalProperties":false}`

// check is a fresh Check over answerSchema, with repair when repair is
// set and feedback bounded by maxFeedback (0: the default).
func check(t *testing.T, repair bool, maxFeedback int64) *Check {
	t.Helper()
	c, err := New(&Spec{Schema: answerSchema, Repair: repair, MaxFeedbackBytes: maxFeedback})
	if err != nil || c == nil {
		t.Fatal(err)
	}
	return c
}

func TestOutputValidOnFirstAnswerNeedsNoRepair(t *testing.T) {
	c := check(t, true, 0)
	if c.Validate(`{"paid":true,"invoice":"INV-1042"}`) || !c.Valid() {
		t.Fatal("a valid answer needs no repair")
	}
	rec, rep := c.Records()
	if rec.Status != schema.StatusValid || rep.Status != RepairNotNeeded || rep.ValidationAttempts != 1 || rep.Attempts != 0 {
		t.Fatalf("records %+v %+v", rec, rep)
	}
}

func TestOutputOneRepairThenSucceeded(t *testing.T) {
	c := check(t, true, 512)
	if !c.Validate(`{"paid":"yes","invoice":"INV-1042","secret":"hunter2"}`) {
		t.Fatal("an invalid first answer asks for the repair")
	}
	fb := c.Feedback()
	if len(fb) > 512 || strings.Contains(fb, "hunter2") || strings.Contains(fb, "yes") || !strings.Contains(fb, "schema_violation") {
		t.Fatalf("feedback must hold codes and paths only, bounded: %q", fb)
	}
	if c.Validate(`{"paid":true,"invoice":"INV-1042"}`) {
		t.Fatal("only one repair")
	}
	rec, rep := c.Records()
	// succeeded implies valid, attempts=1 and validation_attempts=2.
	if rec.Status != schema.StatusValid || rep.Status != RepairSucceeded || rep.Attempts != 1 || rep.ValidationAttempts != 2 || rep.FeedbackBytes != len(fb) || rep.PreviousErrorCount == 0 {
		t.Fatalf("records %+v %+v", rec, rep)
	}
}

func TestOutputSecondInvalidAnswerFails(t *testing.T) {
	c := check(t, true, 0)
	c.Validate(`not json`)
	c.Feedback()
	if c.Validate(`{"paid":1}`) || c.Valid() {
		t.Fatal("a second invalid answer is final")
	}
	rec, rep := c.Records()
	if rec.Status != schema.StatusInvalid || len(rec.Diagnostics) == 0 || rep.Status != RepairFailed {
		t.Fatalf("records %+v %+v", rec, rep)
	}
}

func TestOutputWithoutRepairHasNoRepairRecord(t *testing.T) {
	c := check(t, false, 0)
	if c.Validate(`{}`) {
		t.Fatal("no repair when it is not enabled")
	}
	rec, rep := c.Records()
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
		c := check(t, true, 0)
		c.workLeft = c.schema.Work(len(first)) + c.schema.Work(len(second)) - slack
		c.Validate(first)
		c.Feedback()
		c.Validate(second)
		rec, _ := c.Records()
		if slack == 0 && rec.Status != schema.StatusValid {
			t.Fatalf("at the bound: %+v", rec)
		}
		if slack == 1 && (rec.Status != schema.StatusInvalid || rec.Diagnostics[0].Code != schema.CodeValidationWork) {
			t.Fatalf("one past the bound: %+v", rec)
		}
	}
}

func TestOutputBlockedRepair(t *testing.T) {
	c := check(t, true, 0)
	c.Validate(`[]`)
	c.Block()
	_, rep := c.Records()
	if rep.Status != RepairBlocked {
		t.Fatalf("status %s", rep.Status)
	}
}

// The two candidates share max_output_bytes too.
func TestOutputCandidatesShareTheOutputBytes(t *testing.T) {
	first, second := `{"paid":"no"}`, `{"paid":true,"invoice":"I"}`
	for _, slack := range []int64{0, 1} {
		c := check(t, true, 0)
		c.bytesLeft = int64(len(first)+len(second)) - slack
		c.Validate(first)
		c.Feedback()
		c.Validate(second)
		rec, _ := c.Records()
		if (slack == 0) != (rec.Status == schema.StatusValid) || slack == 1 && rec.Diagnostics[0].Code != schema.CodeJSONBytes {
			t.Fatalf("slack %d: %+v", slack, rec)
		}
	}
}
