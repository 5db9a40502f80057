package pablo

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/graph"
)

// A sandbox must give what the deployment asks for and open nothing policy
// closes: an authority layer lowering the network shell.run asks for, and
// a writable workspace where policy denies fs.write, each make the
// sandbox (and so shell.run) unsupported, naming the layer (and rule).
func TestGraphSandboxMustBeCompatibleWithPolicy(t *testing.T) {
	const shell = "[options.shell]\nenabled = true\n"
	t.Run("NetworkAskedForAndLowered", func(t *testing.T) {
		d := graphDeployment(t, shell+graphScriptModel+"[options.shell.sandbox]\nnetwork = \"allow\"\n"+
			"[[authority]]\nid = \"host.offline\"\n[authority.shell.sandbox]\nnetwork = \"deny\"\n", "")
		g := mustGraph(t, d, graph.Options{})
		n := wantState(t, g, "sandbox:shell.run", graph.Unsupported, "sandbox_narrowed")
		r := n.Reasons[0]
		if r.Layer != "host.offline" || !strings.Contains(r.Detail, "network=allow") || !strings.Contains(r.Detail, "network=deny") {
			t.Fatalf("reason %+v", r)
		}
		wantState(t, g, "tool:shell.run", graph.Unsupported, "sandbox_narrowed")
	})
	t.Run("NetworkAskedForAndAllowed", func(t *testing.T) {
		d := graphDeployment(t, shell+graphScriptModel+"[options.shell.sandbox]\nnetwork = \"allow\"\n", "")
		wantState(t, mustGraph(t, d, graph.Options{}), "sandbox:shell.run", graph.Ready, "")
	})
	t.Run("WritableWorkspaceWhereFSWriteIsDenied", func(t *testing.T) {
		d := graphDeployment(t, shell+graphScriptModel+"[options.filesystem]\nwrite = true\n[options.shell.sandbox]\nfilesystem = \"workspace-write\"\n"+
			"[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-write\", value = \"fs.write\" }]\n", "")
		g := mustGraph(t, d, graph.Options{})
		n := wantState(t, g, "sandbox:shell.run", graph.Unsupported, "sandbox_policy_incompatible")
		if r := n.Reasons[0]; r.Rule != "ops.no-write" || r.Layer == "" {
			t.Fatalf("reason %+v", r)
		}
	})
	t.Run("WritableWorkspaceWithFSWrite", func(t *testing.T) {
		d := graphDeployment(t, shell+graphScriptModel+"[options.filesystem]\nwrite = true\n[options.shell.sandbox]\nfilesystem = \"workspace-write\"\n", "")
		wantState(t, mustGraph(t, d, graph.Options{}), "sandbox:shell.run", graph.Ready, "")
	})
	t.Run("LayerTurningTheSandboxOnLowersNothingAsked", func(t *testing.T) {
		d := graphDeployment(t, shell+graphScriptModel+"[options.shell.sandbox]\nmode = \"off\"\n"+
			"[[authority]]\nid = \"host.boxed\"\n[authority.shell.sandbox]\nnetwork = \"deny\"\n", "")
		wantState(t, mustGraph(t, d, graph.Options{}), "sandbox:shell.run", graph.Ready, "")
	})
}
