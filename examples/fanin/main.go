// Command fanin runs the bounded fan-in of seed 001 offline: a root agent
// spawns two focused readers under narrowed authority (fs.read alone, an
// output schema each), waits for both, and hands their validated results
// inline to one synthesis child with no tools. A scripted model plays
// every agent (script.json), so nothing leaves the machine.
//
//	go run ./examples/fanin
//
// It prints each agent's events as they arrive, in the tree's order
// (root_seq), then the root's answer and its accounting.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/event"
)

func main() {
	dir := flag.String("dir", "examples/fanin", "the directory holding deployment.toml, script.json and work/")
	flag.Parse()
	if err := run(context.Background(), *dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fanin:", err)
		os.Exit(1)
	}
}

// run loads the deployment in dir, runs the fan-in and writes what
// happened to w.
func run(ctx context.Context, dir string, w io.Writer) error {
	d, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": filepath.Join(dir, "work")},
	})
	if err != nil {
		return err
	}
	rt, err := d.NewRuntime(ctx, pablo.HostOptions{})
	if err != nil {
		return err
	}
	defer rt.Close()
	task, err := rt.Start(ctx, "Compare the north and south regions' Q3 reports.")
	if err != nil {
		return err
	}
	names := map[string]string{}
	for ev := range task.Events() {
		name, ok := names[ev.Agent.AgentID]
		if !ok {
			name = "root"
			if ev.Agent.Depth > 0 {
				name = fmt.Sprintf("child %d", len(names))
			}
			names[ev.Agent.AgentID] = name
		}
		switch ev.Type {
		case event.ToolStarted:
			fmt.Fprintf(w, "%3d %-8s %s %s\n", ev.RootSeq, name, ev.Type, ev.Call.Name)
		case event.RunFinished:
			fmt.Fprintf(w, "%3d %-8s %s %s\n", ev.RootSeq, name, ev.Type, ev.Outcome.Status)
		}
	}
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCompleted {
		return fmt.Errorf("the root ended %s", obj.Outcome.Status)
	}
	fmt.Fprintf(w, "answer: %s\nmodel calls %s, tool calls %s\n", *obj.Outcome.Output, obj.Accounting.ModelCalls, obj.Accounting.ToolCalls)
	return nil
}
