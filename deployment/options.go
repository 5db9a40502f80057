package deployment

// Options is the read-only view of a resolved deployment's options that a
// host reads to wire what it serves itself: the trace file, the OTLP
// exporter, the ACP server's bounds, the MCP servers and A2A remotes whose
// credentials it checks, the Skills roots it discovers. Every default is
// filled in; the JSON keys are the deployment's TOML keys. It is the
// caller's own copy (Deployment.Options returns a new one each time):
// changing it changes neither the deployment nor what a runtime built
// from it enforces. The groups a runtime reads and a host has no use for
// (limits, policy, the shell) are not in it; Deployment.Explain shows the
// whole resolved document.
type Options struct {
	Interfaces Interfaces `json:"interfaces"`
	Trace      Trace      `json:"trace"`
	OTel       OTel       `json:"otel"`
	Skills     Skills     `json:"skills"`
	MCP        MCP        `json:"mcp"`
	A2A        A2A        `json:"a2a"`
}

// Interfaces is options.interfaces: how the host presents a task.
type Interfaces struct {
	// CLIOutput is "text" or "json".
	CLIOutput string `json:"cli_output"`
	ACP       ACP    `json:"acp"`
}

// ACP is options.interfaces.acp, a Go extension.
type ACP struct {
	// MaxSessions bounds the ACP sessions whose prompts run at once; 0
	// when absent (the session handler's default).
	MaxSessions int64 `json:"max_sessions,omitempty"`
	// ClientMCPServers admits the MCP servers an ACP client passes on
	// session/new and session/load; false refuses them.
	ClientMCPServers bool `json:"client_mcp_servers,omitempty"`
	// WorkspaceRoots are the directories an ACP session's cwd may be in
	// (each root itself included); empty means the bound workspace alone.
	// Deployment.WorkspaceRoots resolves them.
	WorkspaceRoots []PathRef `json:"workspace_roots,omitempty"`
}

// Trace is options.trace: the native JSONL trace of a task.
type Trace struct {
	// Path is where the trace is written, nil for no trace file. An ACP
	// host's may hold the {session_id} template.
	Path *PathRef `json:"path,omitempty"`
	// CaptureContent says whether the trace keeps model and tool content.
	CaptureContent bool `json:"capture_content"`
	// MaxBytes bounds the trace file.
	MaxBytes int64 `json:"max_bytes"`
}

// OTel is options.otel: the OpenTelemetry span export a host sets up. A
// host reads no ambient OTEL_* variable instead of these.
type OTel struct {
	// Exporter is "none" or "otlp".
	Exporter    string `json:"exporter"`
	SDKDisabled bool   `json:"sdk_disabled"`
	Endpoint    string `json:"endpoint"`
	Protocol    string `json:"protocol"`
	// Headers names the credential (consumer otel.headers) whose value
	// holds the exporter's headers; never a value.
	Headers            string            `json:"headers,omitempty"`
	Compression        string            `json:"compression"`
	TimeoutMS          int64             `json:"timeout_ms"`
	ServiceName        string            `json:"service_name"`
	ResourceAttributes map[string]string `json:"resource_attributes"`
	Sampler            string            `json:"sampler"`
	SamplerArg         string            `json:"sampler_arg"`
	// Propagators lists the trace context propagators ("tracecontext").
	Propagators        []string `json:"propagators"`
	MaxQueueSize       int64    `json:"max_queue_size"`
	MaxExportBatchSize int64    `json:"max_export_batch_size"`
	ScheduleDelayMS    int64    `json:"schedule_delay_ms"`
	ExportTimeoutMS    int64    `json:"export_timeout_ms"`
}

// Skills is options.skills.
type Skills struct {
	// Roots are the Skills roots by name.
	Roots map[string]PathRef `json:"roots"`
	// Activate lists the Skills every task activates, by qualified name.
	Activate []string `json:"activate"`
	// Pins maps ROOT/NAME (or file/NAME) to the digest its package must
	// have ("sha256:...").
	Pins map[string]string `json:"pins,omitempty"`
	// Inline are the Skills given in the deployment, by name (inline/NAME).
	Inline map[string]InlineSkill `json:"inline,omitempty"`
	// Files are the single-file Skills, by name (file/NAME): each a file
	// holding what a SKILL.md holds.
	Files map[string]PathRef `json:"files,omitempty"`
	// Packages are the package Skills, by name (package/NAME): each read
	// from a versioned archive or a git ref and pinned by digest.
	Packages map[string]SkillPackage `json:"packages,omitempty"`
}

// SkillPackage is options.skills.packages.NAME: exactly one of Archive and
// Git, the version its SKILL.md must declare, and the digest that pins it
// (of the archive's bytes, or of the package's tree at the git ref).
type SkillPackage struct {
	Archive *PathRef  `json:"archive,omitempty"`
	Git     *SkillGit `json:"git,omitempty"`
	Version string    `json:"version,omitempty"`
	Digest  string    `json:"digest"`
}

// SkillGit is a package's git source: a local repository, a ref (a tag, a
// branch or a full commit hash) and the package's directory in its tree.
type SkillGit struct {
	Repo   PathRef `json:"repo"`
	Ref    string  `json:"ref"`
	Subdir string  `json:"subdir,omitempty"`
}

// InlineSkill is options.skills.inline.NAME: a Skill given in the
// deployment, its fields what a SKILL.md's frontmatter and body hold.
type InlineSkill struct {
	Description   string   `json:"description"`
	Instructions  string   `json:"instructions"`
	License       string   `json:"license,omitempty"`
	Compatibility string   `json:"compatibility,omitempty"`
	AllowedTools  []string `json:"allowed_tools,omitempty"`
	// Owner, Version, TaskKinds, CompatibleAdapters and Credentials are
	// the bundle fields; they grant nothing.
	Owner              string   `json:"owner,omitempty"`
	Version            string   `json:"version,omitempty"`
	TaskKinds          []string `json:"task_kinds,omitempty"`
	CompatibleAdapters []string `json:"compatible_adapters,omitempty"`
	Credentials        []string `json:"credentials,omitempty"`
}

// MCP is options.mcp: the configured MCP servers.
type MCP struct {
	Servers map[string]MCPServer `json:"servers"`
}

// MCPServer is one configured MCP server. Env and Headers map a variable
// or header to the name of the credential that supplies it, never a value.
type MCPServer struct {
	// Transport is "stdio" or "http".
	Transport string `json:"transport"`
	// Command, Args, CWD and Env launch a stdio server.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	CWD     *PathRef          `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL and Headers reach an http server.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth, when set, is an http server's OAuth 2.1 client.
	OAuth *MCPOAuth `json:"oauth,omitempty"`
	// Required makes a task fail when the server is unavailable; an
	// optional one is left out.
	Required           bool  `json:"required"`
	StartupTimeoutMS   int64 `json:"startup_timeout_ms"`
	OperationTimeoutMS int64 `json:"operation_timeout_ms"`
	// Pins maps raw tool names to their expected definition digests.
	Pins map[string]string `json:"pins,omitempty"`
}

// MCPOAuth is options.mcp.servers.NAME.oauth. ClientSecret and
// PrivateKey name credentials (consumer mcp.oauth), never values.
type MCPOAuth struct {
	Grant             string   `json:"grant"`
	ClientID          string   `json:"client_id,omitempty"`
	ClientSecret      string   `json:"client_secret,omitempty"`
	PrivateKey        string   `json:"private_key,omitempty"`
	ClientMetadataURL string   `json:"client_metadata_url,omitempty"`
	Scopes            []string `json:"scopes,omitempty"`
	// IDToken names the credential of the user's ID token; with
	// IdentityProvider and IdentityClientID it is for grant
	// identity_assertion.
	IDToken          string `json:"id_token,omitempty"`
	IdentityProvider string `json:"identity_provider,omitempty"`
	IdentityClientID string `json:"identity_client_id,omitempty"`
}

// A2A is options.a2a: the configured remote agents.
type A2A struct {
	Remotes map[string]A2ARemote `json:"remotes"`
}

// A2ARemote is one configured remote agent.
type A2ARemote struct {
	CardURL      string `json:"card_url"`
	Endpoint     string `json:"endpoint"`
	TraceContext bool   `json:"trace_context"`
	// Bearer, when set, names the credential (consumer a2a.bearer) sent
	// to Endpoint; never a value.
	Bearer *Bearer `json:"bearer,omitempty"`
}

// Bearer is a remote's bearer authentication: the scheme and the name of
// the credential whose value is sent.
type Bearer struct {
	Scheme     string `json:"scheme"`
	Credential string `json:"credential"`
}
