package acp

import (
	"slices"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo"
)

// Command is a slash command the agent offers the editor: an activated
// Skill, by its short name and its description. A prompt that starts with
// "/name" reaches the model as the user wrote it; the Skill's
// instructions are in every task's context already, so the command names
// work and grants nothing.
type Command struct {
	// Name is the command without its slash: the Skill's name.
	Name string
	// Description says what the command does: the Skill's description.
	Description string
	// Hint, when set, is the placeholder an editor shows for the text
	// typed after the command.
	Hint string
	// TaskKinds, when not empty, are the task kinds the Skill is for
	// (its task-kinds): a session of another kind is not offered it, as
	// its tasks do not activate it. Empty offers it to every session.
	TaskKinds []string
}

// commands sends the session's available_commands_update, after the
// response that opened it, when there are commands to offer it: those
// for its task kind, or every one for a session of none.
func (c *conn) commands(s *pablo.Session) error {
	kind := s.Kind()
	var offered []Command
	for _, cmd := range c.opts.Commands {
		if kind == "" || len(cmd.TaskKinds) == 0 || slices.Contains(cmd.TaskKinds, kind) {
			offered = append(offered, cmd)
		}
	}
	if len(offered) == 0 {
		return nil
	}
	sessionID := s.ID()
	u := sdk.SessionAvailableCommandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: make([]sdk.AvailableCommand, 0, len(offered))}
	for _, cmd := range offered {
		ac := sdk.AvailableCommand{Name: cmd.Name, Description: cmd.Description}
		if cmd.Hint != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: cmd.Hint}}
		}
		u.AvailableCommands = append(u.AvailableCommands, ac)
	}
	p := newProjector(sessionID, extensions{}, nil, 0)
	b := p.update(nil, nil, u)
	return c.emit(b)
}
