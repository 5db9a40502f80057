package compaction

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pabloagent/pablo/model"
)

func TestEstimateIsTheReferenceFormula(t *testing.T) {
	for _, tc := range []struct {
		bytes uint64
		items int
		want  uint64
	}{
		{0, 0, 128}, // 512 / 4
		{1, 0, 129}, // 513 / 4 rounded up
		{4, 0, 129}, // 516 / 4
		{5, 0, 130}, // 517 / 4 rounded up
		{1000, 3, (1000 + 512 + 192 + 3) / 4},
		{^uint64(0), 1, ^uint64(0)/4 + 1}, // saturates, never wraps
	} {
		if got := EstimateTokens(tc.bytes, tc.items); got != tc.want {
			t.Errorf("EstimateTokens(%d, %d) = %d, want %d", tc.bytes, tc.items, got, tc.want)
		}
	}
}

// TestCalibrationKeepsTheMaximumPerExactProfile: a report above the
// estimate scales later estimates of that profile alone; a report below
// it, or none, leaves the reference's estimate; the last report counts.
func TestCalibrationKeepsTheMaximumPerExactProfile(t *testing.T) {
	var c Calibration
	base := EstimateTokens(4000, 10)
	c.Observe("vercel/a", 4000, 10, 2*base)
	if got := c.Estimate("vercel/a", 4000, 10); got != 2*base {
		t.Fatalf("calibrated %d, want %d", got, 2*base)
	}
	if got := c.Estimate("vercel/ab", 4000, 10); got != base {
		t.Fatalf("another profile took the calibration: %d", got)
	}
	c.Observe("vercel/a", 4000, 10, 0) // no report: unchanged
	if got := c.Estimate("vercel/a", 4000, 10); got != 2*base {
		t.Fatalf("a zero report changed the calibration: %d", got)
	}
	c.Observe("vercel/a", 4000, 10, base/2) // below the estimate: the estimate stands
	if got := c.Estimate("vercel/a", 4000, 10); got != base {
		t.Fatalf("a report below the estimate lowered it: %d, want %d", got, base)
	}
}

// TestTriggerBoundaries: each trigger at its threshold, one below and one
// past it, and the fit check at the ceiling and one past it.
func TestTriggerBoundaries(t *testing.T) {
	b := Bounds{ContextBytes: 10000, MarginPercent: 10}
	if b.ByteThreshold() != 9000 {
		t.Fatalf("threshold %d", b.ByteThreshold())
	}
	for _, tc := range []struct {
		bytes uint64
		due   bool
	}{{8999, false}, {9000, true}, {9001, true}} {
		if got := b.Due(Measure{Bytes: tc.bytes}); got != tc.due {
			t.Errorf("%d bytes under 10000 - 10%%: due %v, want %v", tc.bytes, got, tc.due)
		}
	}
	if !b.Fits(Measure{Bytes: 10000}) || b.Fits(Measure{Bytes: 10001}) {
		t.Error("a request fits at the ceiling and not one byte past it")
	}
	w := Bounds{WindowTokens: 1000, MaxOutputTokens: 100, MarginPercent: 10}
	for _, tc := range []struct {
		tokens uint64
		due    bool
	}{{799, false}, {800, true}, {801, true}} {
		if got := w.Due(Measure{Tokens: tc.tokens, Bytes: 1 << 40}); got != tc.due {
			t.Errorf("%d tokens + 100 against 1000 - 10%%: due %v, want %v (no byte ceiling)", tc.tokens, got, tc.due)
		}
	}
	if !w.Fits(Measure{Tokens: 900}) || w.Fits(Measure{Tokens: 901}) {
		t.Error("tokens + output fit at the window and not one past it")
	}
	if (Bounds{MarginPercent: 10}).Due(Measure{Bytes: 1 << 62, Tokens: 1 << 62}) {
		t.Error("without a ceiling or a known window nothing is due")
	}
	if got := (Bounds{ContextBytes: 1<<64 - 1, MarginPercent: 50}).ByteThreshold(); got != 1<<63 {
		t.Errorf("the margin of the largest ceiling overflowed: %d", got)
	}
}

func history(turns int) []model.Message {
	h := []model.Message{{Role: model.RoleUser, Content: "task"}, {Role: model.RoleUser, Content: "skill"}}
	for i := range turns {
		id := string(rune('a' + i))
		h = append(h, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "fs_read"}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Content: "page"})
	}
	return h
}

// TestChooseKeepsThePinnedAndTheRecentTurns: the span starts after the
// pinned prefix and ends where the kept turns start, at an assistant
// message, so a kept tool result keeps its call.
func TestChooseKeepsThePinnedAndTheRecentTurns(t *testing.T) {
	h := history(5) // 2 pinned + 10
	for _, tc := range []struct {
		keep      int
		to, turns int
	}{{0, 12, 5}, {1, 10, 4}, {2, 8, 3}, {4, 4, 1}, {5, 2, 0}, {32, 2, 0}} {
		sp := Choose(h, 2, tc.keep)
		if sp.From != 2 || sp.To != tc.to || sp.Turns != tc.turns {
			t.Errorf("keep %d: span %+v, want [2, %d) with %d turns", tc.keep, sp, tc.to, tc.turns)
		}
		if sp.To < len(h) && h[sp.To].Role != model.RoleAssistant {
			t.Errorf("keep %d: the kept part starts with a %s message", tc.keep, h[sp.To].Role)
		}
		if sp.Empty() != (tc.turns == 0) {
			t.Errorf("keep %d: Empty %v", tc.keep, sp.Empty())
		}
	}
	// A previous summary right after the pinned prefix is replaced with
	// the turns since.
	sp := Choose(h, 2, 1)
	h2 := Replace(h, sp, Message("first"))
	if len(h2) != 5 || h2[2].Content != SummaryHeader+"first" || len(h) != 12 {
		t.Fatalf("replaced history %d messages (original %d)", len(h2), len(h))
	}
	h2 = append(h2, history(2)[2:]...)
	sp = Choose(h2, 2, 1)
	if sp.From != 2 || sp.Turns != 2 {
		t.Fatalf("second span %+v: want the previous summary and the turn since", sp)
	}
}

func TestCheckRefusesWhatIsNotAStrictlySmallerSummary(t *testing.T) {
	for _, tc := range []struct {
		text          string
		finish        model.FinishReason
		msg, replaced uint64
		want          Reason
	}{
		{"fine", model.FinishStop, 10, 11, ""},
		{"fine", model.FinishStop, 11, 11, ReasonNotSmaller},
		{"fine", model.FinishStop, 12, 11, ReasonNotSmaller},
		{"fine", model.FinishLength, 10, 100, ReasonNotSmaller},
		{strings.Repeat("x", 257), model.FinishStop, 10, 1000, ReasonNotSmaller},
		{strings.Repeat("x", 256), model.FinishStop, 10, 1000, ""},
		{" \n\t", model.FinishStop, 10, 100, ReasonEmptySummary},
		{"\xff", model.FinishStop, 10, 100, ReasonSummaryUnavailable},
	} {
		if got := Check(tc.text, tc.finish, 256, tc.msg, tc.replaced); got != tc.want {
			t.Errorf("Check(%.8q, %s, %d, %d) = %q, want %q", tc.text, tc.finish, tc.msg, tc.replaced, got, tc.want)
		}
	}
}

func TestClampsAtTheirMinimum(t *testing.T) {
	if n, ok := ClampTokens(1024, 0, 16); n != 16 || !ok {
		t.Errorf("16 is the least max_summary_tokens: %d %v", n, ok)
	}
	if n, ok := ClampTokens(1024, 15, 0); n != 15 || ok {
		t.Errorf("15 is below the least max_summary_tokens: %d %v", n, ok)
	}
	if n, ok := ClampBytes(16384, 256); n != 256 || !ok {
		t.Errorf("256 is the least max_summary_bytes: %d %v", n, ok)
	}
	if _, ok := ClampBytes(16384, 255); ok {
		t.Error("255 is below the least max_summary_bytes")
	}
}

func TestEveryReasonIsListedOnce(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if seen[r] {
			t.Fatalf("%s twice", r)
		}
		seen[r] = true
	}
	if len(seen) != 15 {
		t.Fatalf("%d reasons, the reference has 14 and its reasoning document one more", len(seen))
	}
}

// FuzzSummary drives the summary request, the span choice and the check
// with arbitrary text: the request is valid UTF-8 when its input is, the
// span stays in bounds, and the check never accepts a summary that is not
// strictly smaller.
func FuzzSummary(f *testing.F) {
	f.Add("hello", "page", 2, uint64(40))
	f.Add("\xff\xfe", "", 0, uint64(0))
	f.Fuzz(func(t *testing.T, summary, content string, keep int, replaced uint64) {
		h := history(3)
		h[3].Content = content
		sp := Choose(h, 2, keep%40)
		if sp.From < 2 || sp.To > len(h) || sp.To < sp.From {
			t.Fatalf("span %+v out of bounds", sp)
		}
		req := Request(h[sp.From:sp.To], 64)
		if utf8.ValidString(content) && !utf8.ValidString(req.Messages[0].Content) {
			t.Fatal("the transcript of valid text is not valid UTF-8")
		}
		if len(req.Tools) != 0 {
			t.Fatal("a summary request offers tools")
		}
		msg := Message(summary)
		n := uint64(len(msg.Content) + 16)
		if Check(summary, model.FinishStop, 1<<20, n, replaced) == "" && n >= replaced {
			t.Fatalf("a summary of %d bytes accepted for %d", n, replaced)
		}
	})
}

func TestHalveKeepsTheFirstHalfOfTheTurns(t *testing.T) {
	h := history(5)
	sp := Choose(h, 2, 0)
	for _, want := range []int{2, 1} {
		var ok bool
		sp, ok = Halve(h, sp)
		if !ok || sp.Turns != want || sp.From != 2 || h[sp.To].Role != model.RoleAssistant || Choose(h[:sp.To], 2, 0).Turns != want {
			t.Fatalf("halved to %+v, want %d turns", sp, want)
		}
	}
	if _, ok := Halve(h, sp); ok {
		t.Fatal("a span of one turn was halved")
	}
}
