package mcp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// conformanceScenario is one client scenario of the MCP conformance suite
// and what passing it means here: the checks that must have run and
// succeeded (so no pass is vacuous: a scenario whose flow never ran has
// none of them), and, for a scenario whose right answer is to refuse,
// what the client's error must say.
type conformanceScenario struct {
	name    string
	require []string
	// refuses is text the client's error must hold: the scenario passes
	// only because the client refused for that reason.
	refuses string
}

// The checks every successful authorization code flow runs.
var codeFlow = []string{"prm-pathbased-requested", "authorization-server-metadata", "authorization-request", "pkce-code-challenge-sent",
	"pkce-s256-method-used", "pkce-code-verifier-sent", "pkce-verifier-matches-challenge", "token-request", "valid-bearer-token"}

func with(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

// conformanceScenarios are all 26 client scenarios of the suite's version
// that scripts/install-peers.sh installs.
var conformanceScenarios = []conformanceScenario{
	{name: "initialize", require: []string{"mcp-client-initialization"}},
	{name: "tools_call", require: []string{"tool-add-numbers"}},
	{name: "sse-retry", require: []string{"client-sse-graceful-reconnect", "client-sse-last-event-id", "client-sse-retry-timing"}},
	{name: "elicitation-sep1034-client-defaults", require: []string{"client-elicitation-sep1034-string-default", "client-elicitation-sep1034-integer-default",
		"client-elicitation-sep1034-number-default", "client-elicitation-sep1034-enum-default", "client-elicitation-sep1034-boolean-default"}},
	{name: "auth/metadata-default", require: with(codeFlow, "client-registration")},
	{name: "auth/metadata-var1", require: with(codeFlow, "client-registration")},
	{name: "auth/metadata-var2", require: with(codeFlow, "client-registration")},
	{name: "auth/metadata-var3", require: with(codeFlow, "client-registration")},
	{name: "auth/basic-cimd", require: with(codeFlow, "cimd-client-id-used")},
	{name: "auth/scope-from-www-authenticate", require: with(codeFlow, "scope-from-www-authenticate")},
	{name: "auth/scope-from-scopes-supported", require: with(codeFlow, "scope-from-scopes-supported")},
	{name: "auth/scope-omitted-when-undefined", require: with(codeFlow, "scope-omitted-when-undefined")},
	{name: "auth/scope-step-up", require: with(codeFlow, "scope-step-up-initial", "scope-step-up-escalation")},
	{name: "auth/scope-retry-limit", require: with(codeFlow[:8], "scope-retry-limit"), refuses: "asks for no scope beyond the ones granted"},
	{name: "auth/token-endpoint-auth-basic", require: with(codeFlow, "token-endpoint-auth-method", "resource-parameter-in-authorization", "resource-parameter-in-token", "resource-parameter-consistency")},
	{name: "auth/token-endpoint-auth-post", require: with(codeFlow, "token-endpoint-auth-method", "resource-parameter-in-authorization", "resource-parameter-in-token", "resource-parameter-consistency")},
	{name: "auth/token-endpoint-auth-none", require: with(codeFlow, "token-endpoint-auth-method", "resource-parameter-in-authorization", "resource-parameter-in-token", "resource-parameter-consistency")},
	{name: "auth/pre-registration", require: with(codeFlow, "pre-registration-auth")},
	{name: "auth/2025-03-26-oauth-metadata-backcompat", require: with(codeFlow[1:], "client-registration")},
	{name: "auth/2025-03-26-oauth-endpoint-fallback", require: []string{"client-registration", "authorization-request", "token-request", "valid-bearer-token"}},
	{name: "auth/resource-mismatch", require: []string{"prm-pathbased-requested", "resource-mismatch-rejected"}, refuses: "refusing to authorize for another resource"},
	{name: "auth/offline-access-scope", require: with(codeFlow, "sep-2207-offline-access-requested")},
	{name: "auth/offline-access-not-supported", require: with(codeFlow, "sep-2207-offline-access-not-requested")},
	{name: "auth/client-credentials-basic", require: []string{"prm-pathbased-requested", "authorization-server-metadata", "client-credentials-basic-auth", "valid-bearer-token"}},
	{name: "auth/client-credentials-jwt", require: []string{"prm-pathbased-requested", "authorization-server-metadata", "client-credentials-jwt-verified", "valid-bearer-token"}},
	{name: "auth/cross-app-access-complete-flow", require: []string{"prm-pathbased-requested", "authorization-server-metadata", "complete-flow-token-exchange", "complete-flow-jwt-bearer", "valid-bearer-token"}},
}

// TestConformanceClientScenarios runs every client scenario of the MCP
// conformance suite against a client built on this package. A scenario
// passes only when the checks that prove its flow ran are there and
// succeeded and none failed or warned.
func TestConformanceClientScenarios(t *testing.T) {
	p := needPeers(t)
	dir := t.TempDir()
	client := filepath.Join(dir, "conformanceclient")
	if out, err := exec.Command("go", "build", "-o", client, "./internal/conformanceclient").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if len(conformanceScenarios) != 26 {
		t.Fatalf("%d scenarios listed; the suite has 26 client scenarios", len(conformanceScenarios))
	}
	for _, sc := range conformanceScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(sc.name, "/", "_"))
			cmd := exec.Command(p.node, p.conformance, "client", "--command", client, "--scenario", sc.name, "--timeout", "30000", "-o", out)
			log, runErr := cmd.CombinedOutput()
			files, _ := filepath.Glob(filepath.Join(out, sc.name+"-*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("no checks.json for %s (%v):\n%s", sc.name, runErr, log)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			stderr, _ := os.ReadFile(filepath.Join(filepath.Dir(files[0]), "stderr.txt"))
			var checks []struct {
				ID, Status, ErrorMessage, Description string
			}
			if err := json.Unmarshal(b, &checks); err != nil {
				t.Fatal(err)
			}
			status := map[string]string{}
			for _, c := range checks {
				if c.Status == "FAILURE" || c.Status == "WARNING" {
					t.Errorf("check %s: %s %s %s", c.ID, c.Status, c.Description, c.ErrorMessage)
				}
				if status[c.ID] != "FAILURE" && status[c.ID] != "WARNING" {
					status[c.ID] = c.Status
				}
			}
			for _, id := range sc.require {
				if status[id] != "SUCCESS" {
					t.Errorf("check %s did not succeed (status %q): the scenario's flow did not run", id, status[id])
				}
			}
			if sc.refuses != "" && !strings.Contains(string(stderr), sc.refuses) {
				t.Errorf("the client did not refuse saying %q; its stderr:\n%s", sc.refuses, stderr)
			}
			if sc.refuses == "" && runErr != nil {
				t.Errorf("conformance %s: %v\n%s", sc.name, runErr, log)
			}
			t.Logf("%s: %d required checks passed", sc.name, len(sc.require))
		})
	}
}
