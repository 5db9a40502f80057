package engine

import (
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
)

// TestTreeOwnsAtMostSixteenProcesses: with children enabled a shell
// command takes one of the tree's process permits (its stdio MCP servers
// hold theirs for the task's life); the seventeenth is refused at once,
// a released permit serves again, and other tools and a task without
// children pass.
func TestTreeOwnsAtMostSixteenProcesses(t *testing.T) {
	task := &Task{procs: make(chan struct{}, children.MaxOwnedProcesses)}
	var releases []func()
	for i := range children.MaxOwnedProcesses {
		release, ok := task.processPermit(authority.ShellRun)
		if !ok {
			t.Fatalf("permit %d refused", i+1)
		}
		releases = append(releases, release)
	}
	if _, ok := task.processPermit(authority.ShellRun); ok {
		t.Fatal("a seventeenth process was admitted")
	}
	if _, ok := task.processPermit(authority.FSRead); !ok {
		t.Fatal("a tool that runs no process was refused")
	}
	releases[0]()
	if _, ok := task.processPermit(authority.ShellRun); !ok {
		t.Fatal("a released permit does not serve again")
	}
	if _, ok := (&Task{}).processPermit(authority.ShellRun); !ok {
		t.Fatal("a task without children was refused")
	}
}
