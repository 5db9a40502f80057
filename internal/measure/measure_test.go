package measure

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	var samples []time.Duration
	for i := 30; i >= 1; i-- { // unsorted on purpose
		samples = append(samples, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 15}, {0.95, 29}, {0.99, 30}, {1, 30}, {0.01, 1}} {
		if got := Percentile(samples, c.p); got != c.want {
			t.Errorf("p%v of 1..30 = %v, want %v", c.p*100, got, c.want)
		}
	}
	if samples[0] != 30 {
		t.Error("Percentile sorted its caller's samples")
	}
}

func TestTheFinalAnswerIs32DeltasOf16Bytes(t *testing.T) {
	if d := deltas(); len(d) != 32 || len(FinalText()) != 512 {
		t.Fatalf("%d deltas, %d bytes", len(d), len(FinalText()))
	}
	for _, d := range deltas() {
		if len(d) != DeltaBytes {
			t.Fatalf("delta %q is %d bytes", d, len(d))
		}
	}
}

// post sends one Chat Completions request whose last message is msg and
// returns the streamed text and tool-call arguments.
func post(t *testing.T, p *Provider, msg map[string]any) (text, args string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "fixture", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "go"}, msg}})
	resp, err := http.Post(p.Endpoint(), "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				args += tc.Function.Arguments
			}
		}
	}
	return text, args
}

// The harness counts a sample only when the real shell result reached the
// model and exactly two requests were made.
func TestASampleCountsOnlyWithTheShellResultAndTwoRequests(t *testing.T) {
	p := NewProvider()
	defer p.Close()
	user := map[string]any{"role": "user", "content": "go"}
	result := func(out string) map[string]any {
		return map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"shell":{"stdout":"` + out + `","exit_code":0}}`}
	}

	p.Reset()
	_, args := post(t, p, user)
	var call struct{ Command, CWD string }
	if err := json.Unmarshal([]byte(args), &call); err != nil || call.Command != Command || call.CWD != "." {
		t.Fatalf("the first answer asks for %q (%v), want shell_run of %q", args, err, Command)
	}
	if text, _ := post(t, p, result(CommandOutput)); text != FinalText() {
		t.Fatalf("the second answer streamed %q", text)
	}
	if err := p.Check(); err != nil {
		t.Fatalf("a good sample: %v", err)
	}

	p.Reset()
	post(t, p, user)
	post(t, p, result("something else"))
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "lacks the shell's output") {
		t.Errorf("a tool result without the shell's output: Check = %v", err)
	}

	p.Reset()
	post(t, p, user)
	post(t, p, user)
	post(t, p, result(CommandOutput))
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "3 model requests for 1 task(s), want exactly 2") {
		t.Errorf("three requests: Check = %v", err)
	}
}
