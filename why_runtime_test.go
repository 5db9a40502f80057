package pablo

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/graph"

	"github.com/pabloagent/pablo/authority"
)

// runtimeAdmits is what a runtime built from d actually admits of the
// capability named by kind and name: a tool in its shared view, a Skill
// among its activations, a remote its supervisor can spawn (children on,
// the remote runner holding it, the subagent tool admitted), a route
// entry its route model selects.
func runtimeAdmits(t *testing.T, d *Deployment, host HostOptions, kind, name string) bool {
	t.Helper()
	rt, err := d.NewRuntime(context.Background(), host)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	defer rt.Close()
	switch kind {
	case "tool":
		return rt.e.SharedTool(authority.ID(name))
	case "skill":
		for _, a := range rt.opts.skills {
			if a.Activation.QualifiedName == name {
				return true
			}
		}
		return false
	case "remote":
		return rt.opts.Children != nil && rt.opts.Remote != nil && slices.Contains(rt.opts.Remote.Remotes(), name) &&
			rt.opts.Authority.Decide(authority.Request{Capability: authority.Subagent}).Allowed
	case "model":
		rm, ok := routeOf(rt.opts.Model)
		if !ok {
			t.Fatal("not a route")
		}
		return slices.Contains(rm.EntryNames(), name)
	}
	t.Fatalf("unknown kind %s", kind)
	return false
}

// `pablo why` (Deployment.Why) answers what the runtime does, for each
// capability kind: a native tool policy allows or denies, a Skill selected
// and admitted, selected by an ID policy denies, or only discovered, a
// remote with children on, off or the subagent tool denied, and route
// entries with and without what the route requires.
func TestWhyAgreesWithWhatTheRuntimeAdmits(t *testing.T) {
	keys := func(string) (string, bool) { return "key", true }
	const skill = "---\nname: review\ndescription: Review things.\n---\nRead the evidence.\n"
	const off = "[options.shell]\nenabled = false\n"
	script := graphScriptModel
	cases := []struct {
		name, kind, capability string
		d                      func(t *testing.T) *Deployment
		want                   bool
	}{
		{"ToolAllowed", "tool", "fs.read", func(t *testing.T) *Deployment { return graphDeployment(t, off+script, "") }, true},
		{"ToolDenied", "tool", "fs.search", func(t *testing.T) *Deployment {
			return graphDeployment(t, off+script+"[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-search\", value = \"fs.search\" }]\n", "")
		}, false},
		{"SkillActivated", "skill", "team/review", func(t *testing.T) *Deployment { return graphDeployment(t, off+script, skill) }, true},
		{"SkillDeniedByPolicy", "skill", "team/review", func(t *testing.T) *Deployment {
			return graphDeployment(t, off+script+"[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-review\", value = \"team/review\" }]\n", skill)
		}, false},
		{"SkillOnlyDiscovered", "skill", "team/review", func(t *testing.T) *Deployment {
			return skillRootDeployment(t, off+script, skill, false) // discovered, not activated
		}, false},
		{"RemoteWithChildren", "remote", "reviewer", func(t *testing.T) *Deployment {
			return graphDeployment(t, off+"[options.children]\nenabled = true\n"+script+graphRemote, "")
		}, true},
		// Its bearer's variable unset: why says missing grant, and the
		// runtime does not offer it (rather than failing at spawn).
		{"RemoteMissingItsBearer", "remote", "reviewer", func(t *testing.T) *Deployment {
			return graphDeployment(t, off+"[options.children]\nenabled = true\n"+script+graphRemote, "")
		}, false},
		{"RemoteWithChildrenOff", "remote", "reviewer", func(t *testing.T) *Deployment { return graphDeployment(t, off+script+graphRemote, "") }, false},
		{"RemoteWithSubagentDenied", "remote", "reviewer", func(t *testing.T) *Deployment {
			return graphDeployment(t, off+"[options.children]\nenabled = true\n"+script+graphRemote+
				"[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-children\", value = \"subagent\" }]\n", "")
		}, false},
		{"RouteEntryLackingACapability", "model", "first", func(t *testing.T) *Deployment {
			return providerDeployment(t, routeDoc("capabilities = { tool_calls = false }\n", ""), nil)
		}, false},
		{"RouteEntrySelectable", "model", "second", func(t *testing.T) *Deployment {
			return providerDeployment(t, routeDoc("capabilities = { tool_calls = false }\n", ""), nil)
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.d(t)
			env := keys
			if strings.Contains(c.name, "MissingItsBearer") {
				env = func(name string) (string, bool) { return "key", name != "REVIEWER_TOKEN" }
			}
			e, err := d.Why(context.Background(), c.capability, graph.Options{LookupEnv: env})
			if err != nil {
				t.Fatal(err)
			}
			got := runtimeAdmits(t, d, HostOptions{LookupEnv: env}, c.kind, c.capability)
			if got != c.want || e.Admitted != got {
				t.Fatalf("why admitted %t (causes %+v), the runtime %t, want %t", e.Admitted, e.Causes, got, c.want)
			}
		})
	}
}
