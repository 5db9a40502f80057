package config

import (
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// TestRequiredRolesReachTheAuthority: an MCP server's roles, a
// capability's options.required_roles and an [[authority]] rule's roles
// each deny a task without the role, naming it, and admit one holding it.
func TestRequiredRolesReachTheAuthority(t *testing.T) {
	t.Parallel()
	d, err := loadString(t, `schema_version = 1
[options.shell]
enabled = true
[options.mcp.servers.records]
transport = "stdio"
command = "/bin/true"
roles = ["support-lead"]
[options.required_roles]
"fs.read" = ["reader"]
[[authority]]
id = "ceiling"
[authority.policy.tools]
default = "allow"
allow = [
  { id = "tools.shell", value = "shell.run", roles = ["operator"] },
  { id = "tools.read", value = "fs.read" },
  { id = "tools.records", value = "mcp/records/lookup" },
]
`)
	if err != nil {
		t.Fatal(err)
	}
	set, err := d.Authority()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		capability  authority.ID
		role        string
		layer, rule string
	}{
		{authority.MCPTool("records", "lookup"), "support-lead", authority.LayerConfiguration, authority.RuleRoleRequired},
		{authority.FSRead, "reader", authority.LayerConfiguration, authority.RuleRoleRequired},
		{authority.ShellRun, "operator", "ceiling", "tools.shell"},
	} {
		dec := set.Decide(authority.Request{Capability: tc.capability})
		if dec.Allowed || dec.MissingRole != tc.role || dec.Layer != tc.layer || dec.RuleID != tc.rule {
			t.Errorf("%s without roles: %+v, want %q missing by %s/%s", tc.capability, dec, tc.role, tc.layer, tc.rule)
		}
		held, err := set.WithRoles([]string{tc.role})
		if err != nil {
			t.Fatal(err)
		}
		if dec := held.Decide(authority.Request{Capability: tc.capability}); !dec.Allowed {
			t.Errorf("%s holding %q: %+v", tc.capability, tc.role, dec)
		}
	}
}

// TestRequiredRolesRefuseBadNamesAndDenyRules: a role outside the grammar,
// a required_roles key that is no capability, and roles on a deny rule are
// each refused at load, at their key.
func TestRequiredRolesRefuseBadNamesAndDenyRules(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		"schema_version = 1\n[options.required_roles]\n\"fs.read\" = [\"Support Lead\"]\n",
		"schema_version = 1\n[options.required_roles]\n\"not a tool\" = [\"x\"]\n",
		"schema_version = 1\n[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"d\", value = \"fs.read\", roles = [\"x\"] }]\n",
	} {
		if _, err := loadString(t, doc); err == nil {
			t.Errorf("loaded:\n%s", doc)
		}
	}
}
