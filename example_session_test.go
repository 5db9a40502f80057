package pablo_test

import (
	"context"
	"fmt"
	"os"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
)

// A session handler runs a conversation: each prompt is its own root task,
// and a later one carries the earlier prompts and answers. ACP serves the
// same handler over stdio.
func ExampleSessions() {
	script, _ := pablo.ParseScript([]byte(`{"turns":[{"text":["Noted: the renewal is due 2027-01-01."]}]}`))
	set, _ := authority.New(authority.Config{})
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: set})
	ws, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(ws)
	sessions, _ := pablo.NewSessions(pablo.SessionOptions{
		Runtime:   func(context.Context) (*pablo.Runtime, error) { return rt, nil },
		Workspace: ws,
	})
	session, _ := sessions.New(context.Background(), pablo.SessionRequest{Cwd: ws})
	for _, prompt := range []string{"The renewal is due 2027-01-01.", "When is it due?"} {
		task, _ := session.Prompt(context.Background(), prompt, nil)
		obj := task.Wait()
		fmt.Println(obj.Outcome.Status, *obj.SessionID == session.ID())
	}
	_, err := sessions.New(context.Background(), pablo.SessionRequest{Cwd: "relative/dir"})
	fmt.Println(err)
	// Output:
	// completed true
	// completed true
	// pablo: session: the working directory "relative/dir" is not an absolute path
}
