package config

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/sandbox"
)

func TestShellSandboxDefaultsToDeny(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want string
	}{
		{"schema_version = 1\n", "required filesystem=read-only network=deny"},
		{"schema_version = 1\n[options.filesystem]\nwrite = true\n", "required filesystem=workspace-write network=deny"},
		{"schema_version = 1\n[options.shell.sandbox]\nmode = \"off\"\n", "off"},
		{"schema_version = 1\n[options.shell.sandbox]\nnetwork = \"allow\"\nfilesystem = \"no-fs\"\n", "required filesystem=no-fs network=allow"},
	} {
		d, err := loadString(t, tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.ShellSandbox().String(); got != tc.want {
			t.Errorf("%q: shell sandbox %s, want %s", tc.doc, got, tc.want)
		}
		if !strings.Contains(string(d.CanonicalJSON()), `"sandbox":{`) {
			t.Errorf("%q: the canonical form does not hold the sandbox", tc.doc)
		}
	}
}

func TestNetworkAllowlistTakesCheckedAllowEntries(t *testing.T) {
	d, err := loadString(t, "schema_version = 1\n[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"allowlist\"\nallow = [\"api.example.com\", \"*.pkg.example.org:443\"]\n"+
		"[[authority]]\nid = \"a\"\n[authority.shell.sandbox]\nnetwork = \"allowlist\"\nallow = [\"api.example.com\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ShellSandbox().String(); got != "required filesystem=read-only network=allowlist allow=api.example.com" {
		t.Errorf("shell sandbox %s, want the allowlist both tables write", got)
	}
	for _, tc := range []struct{ doc, option string }{
		{"schema_version = 1\n[options.shell.sandbox]\nnetwork = \"allowlist\"\nallow = [\"https://api.example.com\"]\n", "/options/shell/sandbox/allow/0"},
		{"schema_version = 1\n[options.shell.sandbox]\nnetwork = \"allowlist\"\nallow = [\"127.1\"]\n", "/options/shell/sandbox/allow/0"},
		{"schema_version = 1\n[options.shell.sandbox]\nnetwork = \"allow\"\nallow = [\"api.example.com\"]\n", "/options/shell/sandbox"},
		{"schema_version = 1\n[options.mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n[options.mcp.servers.s.sandbox]\nallow = [\"api.example.com\"]\n", "/options/mcp/servers/s/sandbox"},
	} {
		_, err := loadString(t, tc.doc)
		wantCode(t, err, CodeInvalidValue, tc.option)
	}
}

func TestMCPServerAllowlistTakesCheckedAllowEntries(t *testing.T) {
	d, err := loadString(t, "schema_version = 1\n[options.mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n[options.mcp.servers.s.sandbox]\nnetwork = \"allowlist\"\nallow = [\"api.example.com\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := d.MCPSandbox("s"); p.String() != "required filesystem=read-only network=allowlist allow=api.example.com" {
		t.Errorf("server sandbox %s, want its allowlist", p)
	}
	_, err = loadString(t, "schema_version = 1\n[options.mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n[options.mcp.servers.s.sandbox]\nnetwork = \"allowlist\"\nallow = [\"127.1\"]\n")
	wantCode(t, err, CodeInvalidValue, "/options/mcp/servers/s/sandbox/allow/0")
}

func TestSandboxValuesAreChecked(t *testing.T) {
	for _, tc := range []struct{ doc, option string }{
		{"schema_version = 1\n[options.shell.sandbox]\nmode = \"sometimes\"\n", "/options/shell/sandbox/mode"},
		{"schema_version = 1\n[options.shell.sandbox]\nfilesystem = \"all\"\n", "/options/shell/sandbox/filesystem"},
		{"schema_version = 1\n[options.shell.sandbox]\nread_paths = []\n", "/options/shell/sandbox/read_paths"},
		{"schema_version = 1\n[options.mcp.servers.h]\ntransport = \"http\"\nurl = \"https://example.invalid/mcp\"\n[options.mcp.servers.h.sandbox]\nmode = \"off\"\n", "/options/mcp/servers/h/sandbox"},
		{"schema_version = 1\n[options.mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n[options.mcp.servers.s.sandbox]\nread_paths = [\"/opt\"]\n", "/options/mcp/servers/s/sandbox/read_paths/0"},
	} {
		_, err := loadString(t, tc.doc)
		var code Code = CodeInvalidValue
		if strings.HasSuffix(tc.option, "read_paths") {
			code = CodeUnknownOption
		}
		wantCode(t, err, code, tc.option)
	}
}

func TestWorkspaceWriteNeedsFSWrite(t *testing.T) {
	_, err := loadString(t, "schema_version = 1\n[options.shell.sandbox]\nfilesystem = \"workspace-write\"\n")
	ce := wantCode(t, err, CodeConflict, "/options/shell/sandbox/filesystem")
	if !strings.Contains(ce.Message, "options.filesystem.write = true") {
		t.Errorf("message %q does not say what to change", ce.Message)
	}
	_, err = loadString(t, "schema_version = 1\n[options.mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n[options.mcp.servers.s.sandbox]\nfilesystem = \"workspace-write\"\n")
	wantCode(t, err, CodeConflict, "/options/mcp/servers/s/sandbox/filesystem")
	if _, err := loadString(t, "schema_version = 1\n[options.filesystem]\nwrite = true\n[options.shell.sandbox]\nfilesystem = \"workspace-write\"\n"); err != nil {
		t.Fatal(err)
	}
}

func TestRepoWriteNeedsFSWriteAndNarrowsWorkspaceWrite(t *testing.T) {
	_, err := loadString(t, "schema_version = 1\n[options.shell.sandbox]\nfilesystem = \"repo-write\"\n")
	wantCode(t, err, CodeConflict, "/options/shell/sandbox/filesystem")
	d, err := loadString(t, "schema_version = 1\n[options.filesystem]\nwrite = true\n[options.shell]\nenabled = true\n[options.shell.sandbox]\nfilesystem = \"workspace-write\"\n"+
		"[[authority]]\nid = \"a\"\n[authority.shell.sandbox]\nfilesystem = \"repo-write\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ShellSandbox().Filesystem; got != "repo-write" {
		t.Errorf("workspace-write under a repo-write layer = %s, want repo-write", got)
	}
}

func TestAuthorityLayersNarrowTheSandbox(t *testing.T) {
	d, err := loadString(t, `schema_version = 1
[options.filesystem]
write = true
[options.shell.sandbox]
mode = "off"
[options.mcp.servers.s]
transport = "stdio"
command = "/bin/true"
[options.mcp.servers.s.sandbox]
network = "allow"
read_paths = [{ base = "workspace", path = "tools" }]
[[authority]]
id = "prod"
[authority.shell.sandbox]
mode = "required"
[authority.mcp.sandbox]
network = "deny"
filesystem = "no-fs"
[[authority]]
id = "later"
[authority.shell.sandbox]
filesystem = "read-only"
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ShellSandbox().String(); got != "required filesystem=read-only network=deny" {
		t.Errorf("shell: %s; the layers require the sandbox and narrow it to read-only", got)
	}
	p, paths := d.MCPSandbox("s")
	if p.String() != "required filesystem=no-fs network=deny" || len(paths) != 1 {
		t.Errorf("mcp: %s, %v", p, paths)
	}
	if p.Network != sandbox.Deny {
		t.Error("a layer's network deny did not narrow the server's allow")
	}
	// A layer's own sandbox that is off narrows nothing.
	d, err = loadString(t, "schema_version = 1\n[[authority]]\nid = \"a\"\n[authority.shell.sandbox]\nmode = \"off\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ShellSandbox().String(); got != "required filesystem=read-only network=deny" {
		t.Errorf("a layer that is off widened the sandbox: %s", got)
	}
}

func TestStdioServersAreSandboxedByDefault(t *testing.T) {
	d, err := loadString(t, "schema_version = 1\n[options.mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := d.MCPSandbox("s"); p.String() != "required filesystem=read-only network=deny" {
		t.Errorf("default server sandbox %s", p)
	}
}

func TestFilesystemRepoWriteScopeNeedsWrite(t *testing.T) {
	d, err := loadString(t, "schema_version = 1\n[options.filesystem]\nwrite = true\nscope = \"repo-write\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if d.Options.Filesystem.Scope != "repo-write" {
		t.Errorf("scope %q, want repo-write", d.Options.Filesystem.Scope)
	}
	_, err = loadString(t, "schema_version = 1\n[options.filesystem]\nscope = \"repo-write\"\n")
	wantCode(t, err, CodeInvalidValue, "/options/filesystem/scope")
	_, err = loadString(t, "schema_version = 1\n[options.filesystem]\nwrite = true\nscope = \"repo\"\n")
	wantCode(t, err, CodeInvalidValue, "/options/filesystem/scope")
}

// TestRepositoryHostOnlyAnywhereKeepsEverySandboxsGitConfig: a deployment
// one of whose sandboxes, as the layers leave it, has network
// repository-host-only keeps the git config read-only in every sandbox
// (a shell.run command could otherwise widen a server's next allowlist);
// one with none keeps nothing.
func TestRepositoryHostOnlyAnywhereKeepsEverySandboxsGitConfig(t *testing.T) {
	const base = `schema_version = 1
[options.filesystem]
write = true
[options.shell]
enabled = true
[options.shell.sandbox]
filesystem = "workspace-write"
[options.mcp.servers.s]
transport = "stdio"
command = "/bin/true"
[options.mcp.servers.s.sandbox]
network = "allowlist"
allow = ["git.example.com"]
`
	for _, c := range []struct {
		name, extra string
		want        bool
	}{
		{"none", "", false},
		{"a server's own", "", true},
		{"a layer narrows a server to it", "[[authority]]\nid = \"a\"\n[authority.mcp.sandbox]\nnetwork = \"repository-host-only\"\n", true},
	} {
		doc := base + c.extra
		if c.name == "a server's own" {
			doc = strings.Replace(doc, "network = \"allowlist\"\nallow = [\"git.example.com\"]", "network = \"repository-host-only\"", 1)
		}
		d, err := loadString(t, doc)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := d.MCPSandbox("s")
		if got := d.ShellSandbox().KeepGitConfig; got != c.want || p.KeepGitConfig != c.want || d.UsesRepositoryHostOnly() != c.want {
			t.Errorf("%s: shell keeps %v, server keeps %v, want %v", c.name, got, p.KeepGitConfig, c.want)
		}
	}
}
