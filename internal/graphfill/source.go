// Package graphfill fills the capability requirement graph (package graph)
// from a resolved deployment: the tool profile, MCP servers, Skills, A2A
// remotes, model routes and their credentials, each with its readiness,
// and answers why about one of them. It reads the deployment's checked
// configuration (internal/config types), which is why it is not part of
// the public graph package, and decides every capability with the
// runtime's own decision function, which the root hands it; the root's
// Deployment.Graph and Deployment.Why are thin methods over Graph and Why.
package graphfill

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/shell"
	"github.com/pabloagent/pablo/skills"
)

// Source is what a graph is filled from: the resolved deployment and the
// root's functions that read it as a runtime would.
type Source struct {
	// Config is the resolved deployment.
	Config *config.Deployment
	// Decision is the runtime's decision function (Deployment.Decide):
	// every layer, the approval gates and the memory rules.
	Decision func(ctx context.Context, id authority.ID, args json.RawMessage) (authority.Decision, error)
	// Roles are the roles of the task the graph is computed for
	// (graph.Options.Roles); nil: none.
	Roles []string
	// SkillOptions are the Skills discovery options a runtime uses.
	SkillOptions func() (skills.Options, error)
	// Memory, when set, adds the memory node and its tools.
	Memory func(b *graph.Builder, set *authority.Set)
}

// Decide is Decision.
func (d *Source) Decide(ctx context.Context, id authority.ID, args json.RawMessage) (authority.Decision, error) {
	return d.Decision(ctx, id, args)
}

// Authority is the deployment's authority set, holding Roles.
func (d *Source) Authority() (*authority.Set, error) {
	set, err := d.Config.Authority()
	if err != nil || d.Roles == nil {
		return set, err
	}
	return set.WithRolesSet(d.Roles)
}

// Resolver is the deployment's credential resolver.
func (d *Source) Resolver(opts authority.ResolverOptions) (*authority.Resolver, error) {
	return d.Config.Resolver(opts)
}

// NativeTools lists the native tools the deployment enables.
func (d *Source) NativeTools() []authority.ID { return d.Config.NativeTools() }

// Credentials are the declared credentials by name.
func (d *Source) Credentials() map[string]config.CredentialRef { return d.Config.Credentials() }

func (d *Source) shellPolicy() (*shell.Policy, error) { return d.Config.ShellPolicy() }

func (d *Source) shellSandbox() sandbox.Profile { return d.Config.ShellSandbox() }
