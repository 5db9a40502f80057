package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/mcp"
)

// TestTerminalAnswersAnMCPForm: on a terminal, an MCP server's form is
// asked field by field with the server's text escaped; an empty line
// takes the default, a value outside the field is asked again, and "!"
// declines the whole form.
func TestTerminalAnswersAnMCPForm(t *testing.T) {
	term, controller := openPTY(t)
	s := watch(t, controller)
	a := openTTYApprover(term)
	if a == nil {
		t.Fatal("the pseudo-terminal is not a channel")
	}
	defer a.Close()
	limit, n := 10, 10.0
	form := mcp.Elicitation{Server: "deploy", Tool: "mcp/deploy/release", Message: "Where to?\x1b[2J",
		Fields: []mcp.ElicitationField{
			{Name: "count", Type: "integer", Required: true, Maximum: &n},
			{Name: "env", Type: "string", Enum: []string{"staging", "production"}, Default: "staging"},
			{Name: "notify", Type: "boolean", MaxLength: &limit},
		}}
	type answer struct {
		res mcp.ElicitationResult
		err error
	}
	ask := func() <-chan answer {
		got := make(chan answer, 1)
		go func() {
			res, err := a.Elicit(context.Background(), form)
			got <- answer{res, err}
		}()
		return got
	}
	got := ask()
	ended := make(chan struct{})
	s.waitFor(t, "count [integer] (required): ", 1, ended)
	io.WriteString(controller, "2.5\n")
	s.waitFor(t, "not a value of this field", 1, ended)
	s.waitFor(t, "count [integer] (required): ", 2, ended)
	io.WriteString(controller, "3\n")
	s.waitFor(t, "env [staging | production] default staging: ", 1, ended)
	io.WriteString(controller, "\n")
	s.waitFor(t, "notify [boolean]: ", 1, ended)
	io.WriteString(controller, "yes\n")
	r := <-got
	if r.err != nil || r.res.Action != mcp.ElicitAccept || r.res.Content["count"] != 3.0 || r.res.Content["notify"] != true {
		t.Fatalf("answered %+v %v", r.res, r.err)
	}
	if _, ok := r.res.Content["env"]; ok {
		t.Fatalf("a defaulted field was answered: %+v", r.res.Content)
	}
	if screen := s.String(); !strings.Contains(screen, "during     mcp/deploy/release") || !strings.Contains(screen, `Where to?\u001b[2J`) || strings.Contains(screen, "\x1b[2J") {
		t.Fatalf("the form was not shown escaped:\n%s", screen)
	}
	got = ask()
	s.waitFor(t, "count [integer] (required): ", 3, ended)
	io.WriteString(controller, "!\n")
	if r := <-got; r.err != nil || r.res.Action != mcp.ElicitDecline {
		t.Fatalf("answered %+v %v, want a decline", r.res, r.err)
	}
}
