package engine

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
	"github.com/pabloagent/pablo/skills"
)

type taskKindKey struct{}

// WithTaskKind returns a context that carries the kind of the task an
// agent serves (Request.Kind). The engine sets it on each agent's tool
// calls; skill.read reads it with TaskKind to read only the Skills for
// that kind.
func WithTaskKind(ctx context.Context, kind string) context.Context {
	return context.WithValue(ctx, taskKindKey{}, kind)
}

// TaskKind returns the kind of the task the current agent serves, or ""
// (no kind: every Skill).
func TaskKind(ctx context.Context) string {
	k, _ := ctx.Value(taskKindKey{}).(string)
	return k
}

type skillAuthorityKey struct{}

// WithSkillAuthority returns a context that carries the authority of the
// agent a tool call serves; skill.read reads only the activated Skills it
// admits (a role the task does not hold, a child's narrowed Skills).
func WithSkillAuthority(ctx context.Context, auth authority.Authority) context.Context {
	return context.WithValue(ctx, skillAuthorityKey{}, auth)
}

// admitsSkill reports whether auth admits the Skill named qualified.
func admitsSkill(auth authority.Authority, qualified string) bool {
	return auth == nil || auth.Decide(authority.Request{Capability: authority.ID(qualified)}).Allowed
}

// taskContext is what a task is given after its input: the runtime's
// context, then the instructions of each Skill it activates.
func taskContext(base []model.Message, active []Skill) []model.Message {
	if len(active) == 0 {
		return base
	}
	out := make([]model.Message, 0, len(base)+len(active))
	out = append(out, base...)
	for _, s := range active {
		out = append(out, s.Message)
	}
	return out
}

// SkillCatalog serves skill.read over the activated Skills: an agent
// reads only those of its task's kind (TaskKind) its authority admits
// (WithSkillAuthority).
type SkillCatalog struct {
	Active *skills.Active
	// MaxBytes bounds the file a read returns.
	MaxBytes int
}

// Skills are the activated Skills as Options.Skills takes them.
func (c *SkillCatalog) Skills() []Skill {
	var out []Skill
	for _, s := range c.Active.Skills() {
		out = append(out, Skill{Activation: s.Activation, TaskKinds: s.Skill.Bundle().TaskKinds,
			Message: model.Message{Role: model.RoleUser, Content: s.Message.Text}})
	}
	return out
}

// Tools implements Catalog.
func (c *SkillCatalog) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: authority.SkillRead, Description: skills.ReadToolDescription, InputSchema: json.RawMessage(skills.ReadArgumentsSchema)}}
}

// Call implements Catalog.
func (c *SkillCatalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	args, err := skills.ParseReadArguments(call.Arguments)
	if err != nil {
		return ledger.ToolResult{Status: outcome.ToolInvalidArguments, Code: outcome.FailInvalidToolArguments}
	}
	active := c.Active.ForTaskKind(TaskKind(ctx))
	if auth, _ := ctx.Value(skillAuthorityKey{}).(authority.Authority); auth != nil {
		active = active.Only(func(a skills.Activation) bool { return admitsSkill(auth, a.QualifiedName) })
	}
	res, err := active.Read(ctx, args, skills.ReadOptions{MaxBytes: c.MaxBytes})
	if err != nil {
		return ledger.ToolResult{Status: outcome.ToolRecoverableError, Output: map[string]any{"skill": map[string]any{"error": map[string]any{"code": string(skills.CodeOf(err))}}}}
	}
	return ledger.Completed(map[string]any{"skill": map[string]any{"resource": res}})
}
