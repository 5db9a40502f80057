package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestFanIn runs the example as `go run ./examples/fanin` does: two readers
// and a synthesis child settle, each before the root, and the root answers.
func TestFanIn(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), ".", &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	if strings.Count(got, "run.finished completed") != 4 || !strings.Contains(got, "answer: South grew faster") {
		t.Fatalf("output:\n%s", got)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if !strings.Contains(lines[len(lines)-3], "root") || !strings.Contains(lines[len(lines)-3], "run.finished") {
		t.Errorf("the root's terminal event is not the tree's last:\n%s", got)
	}
}
