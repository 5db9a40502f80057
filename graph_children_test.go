package pablo

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/graph"

	"github.com/pabloagent/pablo/a2a"
)

const graphRemote = "[options.a2a.remotes.reviewer]\ncard_url = \"https://agents.example/.well-known/agent-card.json\"\nendpoint = \"https://agents.example/rpc\"\n" +
	"[options.a2a.remotes.reviewer.bearer]\nscheme = \"Bearer\"\ncredential = \"reviewer\"\n" +
	"[credentials.reviewer]\nconsumer = \"a2a.bearer\"\nsources = [{ kind = \"environment\", name = \"REVIEWER_TOKEN\" }]\n"

// The children node says what a child may be given at most (the root's
// admitted tools but subagent, its servers, Skills and route entries, the
// capacity); a remote shows its configured card URL, endpoint and bearer
// reference, requires the children node, and with probed cards carries
// the admitted card's digest — outside the graph digest — or why the card
// was refused.
func TestGraphChildrenAndRemotesShowTheirSubsetsAndCards(t *testing.T) {
	doc := "[options.shell]\nenabled = false\n[options.children]\nenabled = true\n" + graphScriptModel + graphRemote +
		"[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-search\", value = \"fs.search\" }]\n"
	d := graphDeployment(t, doc, "")
	env := graph.Options{LookupEnv: func(k string) (string, bool) { return "tok", k == "REVIEWER_TOKEN" }}
	g := mustGraph(t, d, env)
	n := wantState(t, g, "children", graph.Ready, "")
	if n.Attributes["tools"] != "fs.list,fs.read" || n.Attributes["max_active"] != "2" || n.Attributes["max_total"] != "16" {
		t.Fatalf("children attributes %v", n.Attributes)
	}
	r := wantState(t, g, "remote:reviewer", graph.Ready, "")
	if r.Attributes["card_url"] != "https://agents.example/.well-known/agent-card.json" || r.Attributes["endpoint"] != "https://agents.example/rpc" || r.Attributes["bearer_credential"] != "reviewer" {
		t.Fatalf("remote attributes %v", r.Attributes)
	}
	// No bearer: a missing grant naming the consumer and the endpoint.
	missing := mustGraph(t, d, graph.Options{})
	wantState(t, missing, "remote:reviewer", graph.MissingGrant, "credential_unavailable")
	if c := missing.Causes("remote:reviewer")[0]; c.Consumer != "a2a.bearer" || c.Destination != "https://agents.example/rpc" {
		t.Fatalf("cause %+v", c)
	}
	// Probed: the admitted card's digest, or the refusal.
	digest := "sha256:" + strings.Repeat("c", 64)
	env.Cards = []a2a.Probe{{Remote: "reviewer", Admitted: true, Card: &a2a.Card{Remote: "reviewer", Digest: digest, Name: "Reviewer", Version: "1"}}}
	probed := mustGraph(t, d, env)
	r = wantState(t, probed, "remote:reviewer", graph.Ready, "")
	if len(r.Reasons) != 1 || r.Reasons[0].Code != "card_admitted" || r.Reasons[0].Digest != digest {
		t.Fatalf("reasons %+v", r.Reasons)
	}
	if probed.Digest != g.Digest || !probed.Probed {
		t.Fatalf("a fetched card changed the graph digest")
	}
	env.Cards = []a2a.Probe{{Remote: "reviewer", Reason: a2a.CardEndpointMismatch, Detail: "the card's interface is not the configured endpoint"}}
	wantState(t, mustGraph(t, d, env), "remote:reviewer", graph.Unhealthy, "card_endpoint_mismatch")
	// A denied subagent tool takes the children and the remote with it.
	denied := graphDeployment(t, strings.Replace(doc, `value = "fs.search"`, `value = "subagent"`, 1), "")
	env.Cards = nil
	wantState(t, mustGraph(t, denied, env), "remote:reviewer", graph.Denied, "policy_denied")
}

// Remotes with children off are unreachable: no subagent tool offers
// spawn_remote.
func TestGraphRemoteWithChildrenOffIsUnsupported(t *testing.T) {
	d := graphDeployment(t, "[options.shell]\nenabled = false\n"+graphScriptModel+graphRemote, "")
	g := mustGraph(t, d, graph.Options{LookupEnv: func(string) (string, bool) { return "tok", true }})
	wantState(t, g, "remote:reviewer", graph.Unsupported, "children_disabled")
}
