package pablo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
	"github.com/pabloagent/pablo/tracefile"
)

// traceSchema resolves docs/schemas/trace-event.schema.json with the
// schemas it refers to.
func traceSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	raw := map[string]*jsonschema.Schema{}
	for _, name := range []string{"trace-event", "common"} {
		b, err := os.ReadFile(filepath.Join("docs", "schemas", name+".schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		raw[s.ID] = &s
	}
	loader := func(u *url.URL) (*jsonschema.Schema, error) {
		u2 := *u
		u2.Fragment = ""
		if s, ok := raw[u2.String()]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("no schema %s", u)
	}
	r, err := raw["urn:pablo:cli:trace-event"].Resolve(&jsonschema.ResolveOptions{Loader: loader})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCompactionKeepsThePinnedAndRecordsNoContent: after a compaction the
// next request still holds the task and a Skill's instructions verbatim,
// then the summary as a user-role derived history summary with a known
// secret masked; no event and no trace line (content captured or not)
// holds the summary; every trace line matches the trace schema.
func TestCompactionKeepsThePinnedAndRecordsNoContent(t *testing.T) {
	t.Parallel()
	const marker = "SUMMARY-MARKER-7f3c"
	const skill = "SKILL-INSTRUCTIONS: always cite the INV number."
	schema := traceSchema(t)
	var g *compactGateway
	for _, capture := range []bool{false, true} {
		g = newCompactGateway(t, 12)
		g.summaryText = marker + " the key " + providerTestKey + " was seen."
		d := compactDeployment(t, g, contextTable(1)+"[options.limits]\nmax_context_bytes = 12000\n", 1000)
		path := filepath.Join(t.TempDir(), "trace.jsonl")
		tw, err := OpenTrace(path, tracefile.Options{CaptureContent: capture})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := d.NewRuntime(context.Background(), HostOptions{LookupEnv: lookupKey, Sink: tw.Write})
		if err != nil {
			t.Fatal(err)
		}
		rt.opts.Context = []model.Message{{Role: model.RoleUser, Content: skill}} // as an activated Skill's instructions are
		reopen(t, rt)
		obj, events := runTask(t, rt, "Read big.md until told to stop.")
		rt.Close()
		tw.Close()
		if obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
		}
		recs := compactionRecords(events)
		if len(recs) == 0 {
			n, _ := g.counts()
			t.Fatalf("no compaction; requests %v", n)
		}
		for _, ev := range events {
			b, _ := json.Marshal(ev)
			if strings.Contains(string(b), marker) || strings.Contains(string(b), providerTestKey) {
				t.Fatalf("a %s event holds the summary or the key: %s", ev.Type, b)
			}
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		lines := 0
		for sc.Scan() {
			lines++
			line := sc.Text()
			if strings.Contains(line, marker) {
				t.Fatalf("capture=%v: a trace line holds the summary: %s", capture, line)
			}
			var v any
			json.Unmarshal([]byte(line), &v)
			if err := schema.Validate(v); err != nil {
				t.Fatalf("capture=%v: trace line does not match the schema: %v\n%s", capture, err, line)
			}
		}
		f.Close()
		if lines < len(events) {
			t.Fatalf("%d trace lines for %d events", lines, len(events))
		}
	}
	// The first request after the first compaction: the task and the
	// Skill verbatim first, then the summary (the key masked), then the
	// kept turn.
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, msgs := range g.messages {
		var sum string
		for _, m := range msgs {
			if strings.HasPrefix(m, "[derived history summary]") {
				sum = m
			}
		}
		if sum == "" {
			continue
		}
		if len(msgs) < 4 || msgs[1] != "Read big.md until told to stop." || msgs[2] != skill || msgs[3] != sum {
			t.Fatalf("after a compaction the request holds %q...", msgs[:min(len(msgs), 4)])
		}
		if !strings.Contains(sum, marker) || strings.Contains(sum, providerTestKey) {
			t.Fatalf("the summary in history: %q", sum)
		}
		return
	}
	t.Fatal("no request carried a summary")
}
