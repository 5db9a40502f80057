package acp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/children"
)

// TestPermissionMetaCarriesTheDelegation: a subagent call's
// session/request_permission _meta names what it delegates as the
// approval.requested event does (the action, the child's capabilities or
// the remote, the handoffs by reference, the digest and size of the
// input), and never the input, which here holds a secret.
func TestPermissionMetaCarriesTheDelegation(t *testing.T) {
	const input = "summarise; token sk-live-4f9a1c secret"
	sum := sha256.Sum256([]byte(input))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	req := approval.Request{ID: "apr_1", AgentID: "root", CallID: "s1", Tool: "subagent", Effect: "delegate", ArgumentsDigest: digest,
		Delegation: &approval.Delegation{Action: children.ActionSpawn, Capabilities: children.Capabilities{Tools: []string{"notes.read"}},
			Handoffs:    []children.Handoff{{SourceAgentID: "agent_a", ResultID: "res_1", Kind: children.HandoffInline}},
			InputDigest: digest, InputBytes: len(input)}}
	b, err := json.Marshal(approvalMeta(req))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"approval":{"agent_id":"root","arguments_digest":"` + digest + `","capability":"subagent","delegation":{"action":"spawn","capabilities":{"mcp_servers":[],"model_route":[],"skills":[],"tools":["notes.read"]},"handoffs":[{"kind":"inline","result_id":"res_1","source_agent_id":"agent_a"}],"input_bytes":38,"input_digest":"` + digest + `"},"effect":"delegate","request_id":"apr_1"}}`
	all := string(b)
	if string(b) != want {
		t.Errorf("meta\n %s\nwant\n %s", b, want)
	}
	req.Delegation = &approval.Delegation{Action: children.ActionSpawnRemote, Remote: "billing", InputDigest: digest, InputBytes: len(input)}
	b, _ = json.Marshal(approvalMeta(req))
	all += string(b)
	if !strings.Contains(string(b), `"delegation":{"action":"spawn_remote","input_bytes":38,"input_digest":"`+digest+`","remote":"billing"}`) {
		t.Errorf("a spawn_remote's meta %s", b)
	}
	for _, s := range []string{"sk-live-4f9a1c", "summarise"} {
		if strings.Contains(all, s) {
			t.Errorf("the meta holds the input: %s", all)
		}
	}
	req.Delegation = nil
	b, _ = json.Marshal(approvalMeta(req))
	if strings.Contains(string(b), "delegation") {
		t.Errorf("a call that delegates nothing names a delegation: %s", b)
	}
}
