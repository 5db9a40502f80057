package config

import (
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger/ceiling"
)

// Options is the typed view of a resolved deployment's options.* tables.
// Field names follow the TOML keys.
type Options struct {
	Run        RunOptions              `json:"run"`
	Model      ModelOptions            `json:"model"`
	Models     map[string]ModelOptions `json:"models"`
	Routes     map[string]Route        `json:"routes"`
	ModelRoute string                  `json:"model_route"`
	Context    ContextOptions          `json:"context"`
	Limits     LimitOptions            `json:"limits"`
	Shell      ShellOptions            `json:"shell"`
	Filesystem FilesystemOptions       `json:"filesystem"`
	Policy     PolicyOptions           `json:"policy"`
	Output     OutputOptions           `json:"output"`
	Skills     SkillsOptions           `json:"skills"`
	MCP        MCPOptions              `json:"mcp"`
	Children   ChildrenOptions         `json:"children"`
	A2A        A2AOptions              `json:"a2a"`
	Interfaces InterfaceOptions        `json:"interfaces"`
	Trace      TraceOptions            `json:"trace"`
	Redaction  RedactionOptions        `json:"redaction"`
	Approvals  ApprovalOptions         `json:"approvals"`
	Memory     MemoryOptions           `json:"memory"`
	Tools      ToolsOptions            `json:"tools"`
	Resume     ResumeOptions           `json:"resume"`
	OTel       OTelOptions             `json:"otel"`
	// RequiredRoles, a Go extension (issue 37), holds by capability ID the
	// roles a task must hold to use it.
	RequiredRoles map[string][]string `json:"required_roles,omitempty"`
	// Audit, a Go extension (issue 37), is seed 002's audit level of the
	// tool profile and of each capability.
	Audit AuditOptions `json:"audit"`
}

// AuditOptions are options.audit: how much of each tool's calls the trace
// keeps (tracefile.AuditLevel), and whether the ledger retains their
// content (not at none: engine.AuditNone).
type AuditOptions struct {
	// Level is the tool profile's level: none, metadata or content;
	// empty: content when trace.capture_content, else metadata.
	Level string `json:"level,omitempty"`
	// Capabilities holds a capability's own level, by capability ID.
	Capabilities map[string]string `json:"capabilities,omitempty"`
}

// ToolLevel is capability's audit level as a trace applies it: its own,
// else the tool profile's, else content with trace.capture_content and
// metadata without.
func (o *Options) ToolLevel(capability string) string {
	if l, ok := o.Audit.Capabilities[capability]; ok {
		return l
	}
	if o.Audit.Level != "" {
		return o.Audit.Level
	}
	if o.Trace.CaptureContent {
		return "content"
	}
	return "metadata"
}

// ToolsOptions is options.tools, a Go extension: how a model's mistakes
// are answered. A misselection (an unknown tool, arguments that fail the
// schema) goes back to the model as a tool result, at most
// MaxRecoverableErrors times in a row per agent (nil: 3; 0: never, the
// reference's contract); a policy denial ends the task unless OnDenial is
// "report", which returns it to the model under the same bound.
type ToolsOptions struct {
	MaxRecoverableErrors *int64 `json:"max_recoverable_errors,omitempty"`
	OnDenial             string `json:"on_denial,omitempty"`
}

// ResumeOptions is options.resume, a Go extension: what a resumed task
// does with a call whose outcome is unknown (dispatched before its host
// stopped, never settled; never run again). "report" (the default) gives
// the model a typed unknown_outcome result; "ask" asks the task's approver
// first; "fail" ends the task.
type ResumeOptions struct {
	Unknown string `json:"unknown,omitempty"`
}

// DefaultMaxRecoverableErrors is options.tools.max_recoverable_errors
// when unset.
const DefaultMaxRecoverableErrors = 3

// Recoverable is options.tools with its defaults: the bound on consecutive
// recovered mistakes per agent, and whether a denial is reported to the
// model.
func (t ToolsOptions) Recoverable() (maxErrors int, reportDenials bool) {
	maxErrors = DefaultMaxRecoverableErrors
	if t.MaxRecoverableErrors != nil {
		maxErrors = int(*t.MaxRecoverableErrors)
	}
	return maxErrors, t.OnDenial == "report"
}

// ApprovalOptions are options.approvals, a Go extension: per tool class,
// "required" makes every allowed call of the class wait for the task's
// approver; empty adds nothing (the privileged defaults still apply).
type ApprovalOptions struct {
	// Shell is shell.run's class.
	Shell string `json:"shell,omitempty"`
	// FilesystemWrite is fs.write's and fs.edit's.
	FilesystemWrite string `json:"filesystem_write,omitempty"`
	// MCP is every MCP tool's.
	MCP string `json:"mcp,omitempty"`
	// Subagent is the subagent tool's.
	Subagent string `json:"subagent,omitempty"`
}

// Required reports whether options.approvals makes every allowed call of
// capability id need approval.
func (a ApprovalOptions) Required(id string) bool { return a.RequiredBy(id) != "" }

// RequiredBy is the class key that makes every allowed call of
// capability id need approval ("options.approvals.shell"), or empty.
func (a ApprovalOptions) RequiredBy(id string) string {
	var key, v string
	switch {
	case id == "shell.run":
		key, v = "shell", a.Shell
	case id == "fs.write" || id == "fs.edit":
		key, v = "filesystem_write", a.FilesystemWrite
	case id == "subagent":
		key, v = "subagent", a.Subagent
	case len(id) > 4 && id[:4] == "mcp/":
		key, v = "mcp", a.MCP
	}
	if v != authority.ApprovalRequired {
		return ""
	}
	return ApprovalsLayer + "." + key
}

// ApprovalsLayer is the layer a requirement of options.approvals is
// reported under; its rule is the class key ("options.approvals.mcp").
const ApprovalsLayer = "options.approvals"

// RedactionOptions are options.redaction, a Go extension.
type RedactionOptions struct {
	// Patterns are suspected-secret patterns (Go RE2, every match at most
	// redact.MaxPatternBytes long) masked beside the built-in credential
	// formats wherever known secret values are masked.
	Patterns []string `json:"patterns,omitempty"`
}

// RunOptions are options.run.
type RunOptions struct {
	Workspace    PathRef `json:"workspace"`
	Instructions *string `json:"instructions,omitempty"`
}

// ModelOptions describe one model profile (options.model or
// options.models.NAME).
type ModelOptions struct {
	Provider            string   `json:"provider"`
	ID                  string   `json:"id"`
	Endpoint            string   `json:"endpoint"`
	Credential          string   `json:"credential"`
	CapabilityProfile   string   `json:"capability_profile"`
	AuthHeader          string   `json:"auth_header"`
	AuthScheme          string   `json:"auth_scheme"`
	ContextWindowTokens *int64   `json:"context_window_tokens,omitempty"`
	Script              *PathRef `json:"script,omitempty"`
	// StreamIdleTimeoutMS bounds the wait for the provider's next byte;
	// zero means providers.DefaultStreamIdleTimeout.
	StreamIdleTimeoutMS int64 `json:"stream_idle_timeout_ms,omitempty"`
	// PromptCaching is "provider_default" (or empty) or "auto": with auto,
	// an anthropic model marks its stable prefix with cache_control.
	PromptCaching string `json:"prompt_caching,omitempty"`
	// Pricing is the model's price list; nil when none is configured.
	Pricing *Pricing `json:"pricing,omitempty"`
	// Retry is options.model.retry (top-level model only); nil keeps the
	// defaults.
	Retry                 *RetryOptions   `json:"retry,omitempty"`
	Reasoning             json.RawMessage `json:"reasoning,omitempty"`
	ReasoningCapabilities json.RawMessage `json:"reasoning_capabilities,omitempty"`
	ModelOptions          json.RawMessage `json:"model_options,omitempty"`
	Capabilities          json.RawMessage `json:"capabilities,omitempty"`
}

// Pricing is a model's prices in micro-USD per million tokens: input
// tokens read from no cache, output tokens, cache-read and cache-write
// input tokens. An unset cache price is the input price.
type Pricing struct {
	Input      uint64  `json:"input"`
	Output     uint64  `json:"output"`
	CacheRead  *uint64 `json:"cache_read,omitempty"`
	CacheWrite *uint64 `json:"cache_write,omitempty"`
}

// RetryOptions is options.model.retry: how often and how patiently a model
// call that failed before any output is retried on the same entry. An unset
// field keeps its default (3 attempts, 500 ms, 30,000 ms); max_attempts = 0
// turns retries off.
type RetryOptions struct {
	MaxAttempts      *int64 `json:"max_attempts,omitempty"`
	InitialBackoffMS *int64 `json:"initial_backoff_ms,omitempty"`
	MaxBackoffMS     *int64 `json:"max_backoff_ms,omitempty"`
}

// Route is options.routes.NAME: an ordered fallback list.
type Route struct {
	Entries                []RouteEntry `json:"entries"`
	MaxAttempts            int          `json:"max_attempts"`
	PerAttemptTimeoutMS    int64        `json:"per_attempt_timeout_ms"`
	EligibleErrors         []string     `json:"eligible_errors"`
	RetryUncertainDelivery bool         `json:"retry_uncertain_delivery"`
	RequiredCapabilities   []string     `json:"required_capabilities"`
	Router                 *Router      `json:"router,omitempty"`
}

// Router is options.routes.NAME.router: a classifier that picks a category
// (and so a model) for each request.
type Router struct {
	Provider     string                    `json:"provider"`
	Model        string                    `json:"model"`
	Credential   string                    `json:"credential"`
	Instructions string                    `json:"instructions"`
	TimeoutMS    int64                     `json:"timeout_ms"`
	Categories   map[string]RouterCategory `json:"categories"`
}

// RouterCategory is one category a router may pick, and its model.
type RouterCategory struct {
	Description string `json:"description"`
	Model       string `json:"model"`
}

// RouteEntry names a model or another route.
type RouteEntry struct {
	Model string `json:"model,omitempty"`
	Route string `json:"route,omitempty"`
}

// ContextOptions are options.context (compaction).
type ContextOptions struct {
	Enabled             bool  `json:"enabled"`
	SafetyMarginPercent int64 `json:"safety_margin_percent"`
	MaxSummaryTokens    int64 `json:"max_summary_tokens"`
	MaxSummaryBytes     int64 `json:"max_summary_bytes"`
	KeepRecentTurns     int64 `json:"keep_recent_turns"`
}

// LimitOptions are options.limits. A loaded deployment sets every
// ceiling.Limit (the defaults written out), so none is left unset.
type LimitOptions struct {
	MaxModelCalls      ceiling.Limit `json:"max_model_calls"`
	MaxToolCalls       ceiling.Limit `json:"max_tool_calls"`
	MaxTotalTokens     ceiling.Limit `json:"max_total_tokens"`
	MaxCostMicroUSD    ceiling.Limit `json:"max_cost_microusd"`
	MaxRunDurationMS   int64         `json:"max_run_duration_ms"`
	MaxToolDurationMS  int64         `json:"max_tool_duration_ms"`
	MaxToolInputBytes  int64         `json:"max_tool_input_bytes"`
	MaxToolOutputBytes int64         `json:"max_tool_output_bytes"`
	MaxContextBytes    int64         `json:"max_context_bytes"`
	MaxInputBytes      int64         `json:"max_input_bytes"`
	MaxOutputBytes     int64         `json:"max_output_bytes"`
	MaxOutputTokens    int64         `json:"max_output_tokens"`
	MaxEvents          ceiling.Limit `json:"max_events"`
	Filesystem         struct {
		MaxFileBytes ceiling.Limit `json:"max_file_bytes"`
		MaxEntries   ceiling.Limit `json:"max_entries"`
		MaxDepth     ceiling.Limit `json:"max_depth"`
		MaxScanBytes ceiling.Limit `json:"max_scan_bytes"`
	} `json:"filesystem"`
}

// LimitCeilings are an authority layer's limits: a ceiling on each
// options.limits value the layer writes; the others are not set.
type LimitCeilings struct {
	MaxModelCalls      ceiling.Limit `json:"max_model_calls"`
	MaxToolCalls       ceiling.Limit `json:"max_tool_calls"`
	MaxTotalTokens     ceiling.Limit `json:"max_total_tokens"`
	MaxCostMicroUSD    ceiling.Limit `json:"max_cost_microusd"`
	MaxRunDurationMS   ceiling.Limit `json:"max_run_duration_ms"`
	MaxToolDurationMS  ceiling.Limit `json:"max_tool_duration_ms"`
	MaxToolInputBytes  ceiling.Limit `json:"max_tool_input_bytes"`
	MaxToolOutputBytes ceiling.Limit `json:"max_tool_output_bytes"`
	MaxContextBytes    ceiling.Limit `json:"max_context_bytes"`
	MaxInputBytes      ceiling.Limit `json:"max_input_bytes"`
	MaxOutputBytes     ceiling.Limit `json:"max_output_bytes"`
	MaxOutputTokens    ceiling.Limit `json:"max_output_tokens"`
	MaxEvents          ceiling.Limit `json:"max_events"`
	Filesystem         struct {
		MaxFileBytes ceiling.Limit `json:"max_file_bytes"`
		MaxEntries   ceiling.Limit `json:"max_entries"`
		MaxDepth     ceiling.Limit `json:"max_depth"`
		MaxScanBytes ceiling.Limit `json:"max_scan_bytes"`
	} `json:"filesystem"`
}

// ShellOptions are options.shell.
type ShellOptions struct {
	Enabled     bool          `json:"enabled"`
	Commands    *CommandRules `json:"commands,omitempty"`
	Environment struct {
		Values       map[string]string `json:"values"`
		AllowedNames []string          `json:"allowed_names"`
	} `json:"environment"`
	CWDRoots *authority.Rules `json:"cwd_roots,omitempty"`
	// Sandbox is options.shell.sandbox, a Go extension; a loaded
	// deployment has its defaults written out.
	Sandbox SandboxOptions `json:"sandbox"`
}

// SandboxOptions are a sandbox table (options.shell.sandbox,
// options.mcp.servers.NAME.sandbox, an authority layer's shell.sandbox and
// mcp.sandbox): the values as written, empty when not.
type SandboxOptions struct {
	Mode       string    `json:"mode,omitempty"`
	Filesystem string    `json:"filesystem,omitempty"`
	Network    string    `json:"network,omitempty"`
	Allow      []string  `json:"allow,omitempty"`
	ReadPaths  []PathRef `json:"read_paths,omitempty"`
}

// CommandRules is a literal command policy.
type CommandRules struct {
	Default string        `json:"default"`
	Allow   []CommandRule `json:"allow"`
	Deny    []CommandRule `json:"deny"`
}

// CommandRule matches one executable and its leading or exact arguments.
type CommandRule struct {
	ID         string   `json:"id"`
	Executable string   `json:"executable"`
	Args       []string `json:"args"`
	Match      string   `json:"match"`
	// Approval, on an allow rule, is "required" or empty: a Go extension.
	Approval string `json:"approval,omitempty"`
	Examples *struct {
		Match    []string `json:"match"`
		NotMatch []string `json:"not_match"`
	} `json:"examples,omitempty"`
}

// FilesystemOptions are options.filesystem.
type FilesystemOptions struct {
	Enabled bool `json:"enabled"`
	Write   bool `json:"write"`
	// Scope is where the tools write: "workspace-write" (the default,
	// written as absent) or "repo-write" (only the work tree of the git
	// repository holding the workspace, never a .git).
	Scope string `json:"scope,omitempty"`
}

// PolicyOptions are the ordinary static policy dimensions.
type PolicyOptions struct {
	Tools       *authority.Rules `json:"tools,omitempty"`
	Executables *authority.Rules `json:"executables,omitempty"`
	ReadRoots   *authority.Rules `json:"read_roots,omitempty"`
	WriteRoots  *authority.Rules `json:"write_roots,omitempty"`
}

// OutputOptions are options.output (final-answer validation).
type OutputOptions struct {
	// Schema is the pinned inline JSON schema text, or empty.
	Schema            string `json:"schema,omitempty"`
	MaxValidationWork int64  `json:"max_validation_work"`
	Repair            struct {
		Enabled          bool  `json:"enabled"`
		MaxFeedbackBytes int64 `json:"max_feedback_bytes"`
	} `json:"repair"`
}

// SkillsOptions are options.skills.
type SkillsOptions struct {
	Roots    map[string]PathRef `json:"roots"`
	Activate []string           `json:"activate"`
	// Pins pins a Skill package by digest, by ROOT/NAME
	// (skills.VerifyPackage): a package that differs is refused.
	Pins map[string]string `json:"pins,omitempty"`
	// Inline holds the Skills given in the deployment, by name
	// (skills.Inline): admitted as inline/NAME without touching disk.
	Inline map[string]InlineSkill `json:"inline,omitempty"`
	// Files names the single-file Skills, by name: each file holds what
	// a SKILL.md holds and is admitted as file/NAME (skills.Options.Files).
	Files map[string]PathRef `json:"files,omitempty"`
	// Packages names the package Skills, by name: each read from a
	// versioned archive or a git ref, pinned by digest, and admitted as
	// package/NAME (skills.Options.Packages).
	Packages map[string]SkillPackage `json:"packages,omitempty"`
}

// SkillPackage is options.skills.packages.NAME: exactly one of Archive
// and Git, and the digest that pins it.
type SkillPackage struct {
	Archive *PathRef  `json:"archive,omitempty"`
	Git     *SkillGit `json:"git,omitempty"`
	Version string    `json:"version,omitempty"`
	Digest  string    `json:"digest"`
}

// SkillGit is a package's git source: a local repository, a ref (a tag,
// a branch or a full commit hash) and the package's directory in its tree.
type SkillGit struct {
	Repo   PathRef `json:"repo"`
	Ref    string  `json:"ref"`
	Subdir string  `json:"subdir,omitempty"`
}

// InlineSkill is options.skills.inline.NAME; its fields are skills.Inline's.
type InlineSkill struct {
	Description        string   `json:"description"`
	Instructions       string   `json:"instructions"`
	License            string   `json:"license,omitempty"`
	Compatibility      string   `json:"compatibility,omitempty"`
	AllowedTools       []string `json:"allowed_tools,omitempty"`
	Owner              string   `json:"owner,omitempty"`
	Version            string   `json:"version,omitempty"`
	TaskKinds          []string `json:"task_kinds,omitempty"`
	CompatibleAdapters []string `json:"compatible_adapters,omitempty"`
	Credentials        []string `json:"credentials,omitempty"`
}

// MCPOptions are options.mcp.
type MCPOptions struct {
	Servers  map[string]MCPServer `json:"servers"`
	Policies []MCPPolicy          `json:"policies"`
}

// MCPServer is one configured MCP server.
type MCPServer struct {
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	CWD       *PathRef          `json:"cwd,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// OAuth is an http server's OAuth 2.1 client (a Go extension).
	OAuth    *MCPOAuth `json:"oauth,omitempty"`
	Required bool      `json:"required"`
	// Roles are the roles a task must hold to use any tool of the server
	// (a Go extension, issue 37).
	Roles              []string `json:"roles,omitempty"`
	StartupTimeoutMS   int64    `json:"startup_timeout_ms"`
	OperationTimeoutMS int64    `json:"operation_timeout_ms"`
	// Pins maps raw tool names to expected definition digests.
	Pins map[string]string `json:"pins,omitempty"`
	// Sandbox is a stdio server's sandbox, its defaults written out.
	Sandbox *SandboxOptions `json:"sandbox,omitempty"`
}

// MCPOAuth is options.mcp.servers.NAME.oauth: the server's OAuth 2.1
// client. ClientSecret and PrivateKey name credentials (consumer
// mcp.oauth).
type MCPOAuth struct {
	Grant             string   `json:"grant"`
	ClientID          string   `json:"client_id,omitempty"`
	ClientSecret      string   `json:"client_secret,omitempty"`
	PrivateKey        string   `json:"private_key,omitempty"`
	ClientMetadataURL string   `json:"client_metadata_url,omitempty"`
	Scopes            []string `json:"scopes,omitempty"`
	// IDToken (a credential name), IdentityProvider and IdentityClientID
	// are for grant identity_assertion.
	IDToken          string `json:"id_token,omitempty"`
	IdentityProvider string `json:"identity_provider,omitempty"`
	IdentityClientID string `json:"identity_client_id,omitempty"`
}

// MCPPolicy is one ordinary MCP policy layer.
type MCPPolicy struct {
	Servers   *authority.Rules `json:"servers,omitempty"`
	Tools     *authority.Rules `json:"tools,omitempty"`
	Launchers *authority.Rules `json:"launchers,omitempty"`
	// Sandbox, in an authority layer only, is a ceiling on every stdio
	// server's sandbox.
	Sandbox *SandboxOptions `json:"sandbox,omitempty"`
}

// ChildrenOptions are options.children.
type ChildrenOptions struct {
	Enabled bool `json:"enabled"`
}

// A2AOptions are options.a2a.
type A2AOptions struct {
	Remotes map[string]A2ARemote `json:"remotes"`
}

// A2ARemote is one configured remote agent.
type A2ARemote struct {
	CardURL      string `json:"card_url"`
	Endpoint     string `json:"endpoint"`
	TraceContext bool   `json:"trace_context"`
	// Approval, on an [[authority]] layer's a2a_remotes entry only, is
	// "required" or empty: every spawn_remote to the remote then asks the
	// task's approver (a Go extension, docs/approvals.md).
	Approval string `json:"approval,omitempty"`
	// Roles, on an [[authority]] layer's a2a_remotes entry only, are the
	// roles a task must hold to delegate to the remote (a Go extension).
	Roles  []string `json:"roles,omitempty"`
	Bearer *struct {
		Scheme     string `json:"scheme"`
		Credential string `json:"credential"`
	} `json:"bearer,omitempty"`
}

// InterfaceOptions are options.interfaces.
type InterfaceOptions struct {
	CLIOutput string `json:"cli_output"`
	// ACP is options.interfaces.acp, a Go extension.
	ACP ACPOptions `json:"acp"`
}

// ACPOptions are options.interfaces.acp, a Go extension (the reference
// reserves the table and refuses it).
type ACPOptions struct {
	// MaxSessions bounds the ACP sessions whose prompts run at once; 0
	// when absent (the session handler's default, 4).
	MaxSessions int64 `json:"max_sessions,omitempty"`
	// ClientMCPServers admits the MCP servers an ACP client passes on
	// session/new and session/load; false (absent) refuses them.
	ClientMCPServers bool `json:"client_mcp_servers,omitempty"`
	// ClientMCPSandbox is the sandbox of every stdio server a client
	// passes, as a configured server's sandbox table (absent: its
	// defaults); the authority layers' mcp.sandbox ceilings narrow it.
	ClientMCPSandbox *SandboxOptions `json:"client_mcp_sandbox,omitempty"`
	// WorkspaceRoots are the directories an ACP session's cwd may be in
	// (each root itself included); empty means the bound workspace alone.
	WorkspaceRoots []PathRef `json:"workspace_roots,omitempty"`
}

// TraceOptions are options.trace.
type TraceOptions struct {
	Path           *PathRef `json:"path,omitempty"`
	CaptureContent bool     `json:"capture_content"`
	MaxBytes       int64    `json:"max_bytes"`
}

// OTelOptions are options.otel.
type OTelOptions struct {
	Exporter           string            `json:"exporter"`
	SDKDisabled        bool              `json:"sdk_disabled"`
	Endpoint           string            `json:"endpoint"`
	Protocol           string            `json:"protocol"`
	Headers            string            `json:"headers,omitempty"`
	Compression        string            `json:"compression"`
	TimeoutMS          int64             `json:"timeout_ms"`
	ServiceName        string            `json:"service_name"`
	ResourceAttributes map[string]string `json:"resource_attributes"`
	Sampler            string            `json:"sampler"`
	SamplerArg         string            `json:"sampler_arg"`
	Propagators        []string          `json:"propagators"`
	MaxQueueSize       int64             `json:"max_queue_size"`
	MaxExportBatchSize int64             `json:"max_export_batch_size"`
	ScheduleDelayMS    int64             `json:"schedule_delay_ms"`
	ExportTimeoutMS    int64             `json:"export_timeout_ms"`
}

// CredentialRef is a named credential reference: a consumer and the
// ordered sources to read, never a value.
type CredentialRef struct {
	Consumer authority.Consumer `json:"consumer"`
	Sources  []CredentialSource `json:"sources"`
}

// CredentialSource is one source of a credential.
type CredentialSource struct {
	Kind     string   `json:"kind"`
	Name     string   `json:"name,omitempty"`
	Path     *PathRef `json:"path,omitempty"`
	Encoding string   `json:"encoding,omitempty"`
	Key      string   `json:"key,omitempty"`
}

// AuthorityLayer is one immutable [[authority]] layer.
type AuthorityLayer struct {
	ID                string               `json:"id"`
	WorkspaceRoots    []PathRef            `json:"workspace_roots,omitempty"`
	ToolNames         []string             `json:"tool_names,omitempty"`
	ModelIDs          []string             `json:"model_ids,omitempty"`
	ProviderEndpoints []string             `json:"provider_endpoints,omitempty"`
	CredentialIDs     []string             `json:"credential_ids,omitempty"`
	OTelEndpoints     []string             `json:"otel_endpoints,omitempty"`
	CaptureContent    *bool                `json:"capture_content,omitempty"`
	Limits            LimitCeilings        `json:"limits"`
	Policy            PolicyOptions        `json:"policy"`
	Shell             AuthorityShell       `json:"shell"`
	MCP               MCPPolicy            `json:"mcp"`
	SkillRoots        []PathRef            `json:"skill_roots,omitempty"`
	A2ARemotes        map[string]A2ARemote `json:"a2a_remotes,omitempty"`

	// present records which list fields were written at all: an empty
	// allowlist permits nothing, an omitted one adds no constraint.
	present map[string]bool
}

// Has reports whether the layer sets field (a TOML key such as
// "tool_names").
func (l AuthorityLayer) Has(field string) bool { return l.present[field] }

// AuthorityShell is an authority layer's shell ceiling.
type AuthorityShell struct {
	Commands    *CommandRules `json:"commands,omitempty"`
	Environment *struct {
		AllowedNames []string `json:"allowed_names"`
	} `json:"environment,omitempty"`
	CWDRoots *authority.Rules `json:"cwd_roots,omitempty"`
	// Sandbox is a ceiling on options.shell.sandbox.
	Sandbox *SandboxOptions `json:"sandbox,omitempty"`
}
