package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/model"
)

// BenchmarkRequestMeasure is the compaction check of one turn (measuring
// the whole request, estimating its tokens, deciding the trigger) over a
// history of 10, 100 and 1,000 turns of one tool call each: it costs the
// same whatever the history's length.
func BenchmarkRequestMeasure(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(turns, "-turns"), func(b *testing.B) {
			rt := &Runtime{opts: Options{Instructions: "You are a task-focused agent.", MaxOutputTokens: 4096}}
			s := &step{t: &Task{rt: rt}, conf: agentConf{contextBytes: 1 << 40},
				comp: &compactor{opts: CompactionOptions{SafetyMarginPercent: 10, ContextWindowTokens: 1 << 29}, profile: "vercel/m"}}
			s.defs = []model.ToolDef{{Name: "fs_read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)}}
			s.addHistory(model.Message{Role: model.RoleUser, Content: "go"})
			page := strings.Repeat("x", 200)
			for i := range turns {
				id := fmt.Sprint("call_", i)
				s.addHistory(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "fs_read", Arguments: json.RawMessage(`{"path":"a"}`)}}},
					model.Message{Role: model.RoleTool, ToolCallID: id, Content: page})
			}
			s.comp.calib.Observe("vercel/m", 1000, 3, 900)
			due := false
			for b.Loop() {
				due = s.bounds().Due(s.measure()) || due
			}
			if due || s.t.historyWalks != 0 {
				b.Fatalf("due %v, %d walks", due, s.t.historyWalks)
			}
		})
	}
}
