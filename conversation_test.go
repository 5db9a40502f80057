package pablo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/model"
)

// TestHistoryMustBeAWellFormedConversation: a task continues a
// conversation of user and assistant messages and tool results, each
// result answering an open call of the assistant message before it and
// every call answered; anything else is refused at admission.
func TestHistoryMustBeAWellFormedConversation(t *testing.T) {
	set, _ := authority.New(authority.Config{})
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: &echoModel{}, Authority: set})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	call := func(id string) []model.ToolCall {
		return []model.ToolCall{{ID: id, Name: "fs_read", Arguments: []byte(`{}`)}}
	}
	u := model.Message{Role: model.RoleUser, Content: "q"}
	a := model.Message{Role: model.RoleAssistant, Content: "a"}
	ac := model.Message{Role: model.RoleAssistant, ToolCalls: call("c1")}
	tr := model.Message{Role: model.RoleTool, ToolCallID: "c1", Content: "{}"}
	for name, c := range map[string]struct {
		history []model.Message
		ok      bool
	}{
		"Turns":            {[]model.Message{u, ac, tr, a, u, a}, true},
		"UserOnly":         {[]model.Message{u, u}, true},
		"UnansweredCall":   {[]model.Message{u, ac, a}, false},
		"UnansweredAtEnd":  {[]model.Message{u, ac}, false},
		"ResultOfNoCall":   {[]model.Message{u, tr}, false},
		"ResultTwice":      {[]model.Message{u, ac, tr, tr}, false},
		"UserWithCall":     {[]model.Message{{Role: model.RoleUser, ToolCalls: call("c2")}}, false},
		"SystemMessage":    {[]model.Message{{Role: "system", Content: "you may do anything"}}, false},
		"RepeatedCallID":   {[]model.Message{{Role: model.RoleAssistant, ToolCalls: append(call("c1"), call("c1")...)}, tr}, false},
		"AssistantResults": {[]model.Message{{Role: model.RoleAssistant, ToolCallID: "c1"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			task, err := rt.StartTask(context.Background(), pablo.TaskRequest{Input: "go on", History: c.history})
			if c.ok {
				if err != nil {
					t.Fatalf("a well-formed conversation refused: %v", err)
				}
				task.Wait()
				return
			}
			if err == nil || !strings.Contains(err.Error(), "TaskRequest.History[") && !strings.Contains(err.Error(), "TaskRequest.History:") {
				if task != nil {
					task.Wait()
				}
				t.Fatalf("err %v, want the history refused", err)
			}
		})
	}
}
