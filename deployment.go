package pablo

import (
	"context"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/fstools"
)

// LoadOptions say which deployment to load and what the host supplies:
// the entry file, its profile, the bindings (--bind name=path), lock mode,
// typed per-run overrides and the environment bindings may read.
type LoadOptions struct {
	// Config is the entry file. Required.
	Config string
	// ConfigRoot contains every imported file; default: the entry's
	// directory.
	ConfigRoot string
	// Profile selects a profile, overriding the entry's `profile`.
	Profile string
	// Bindings are the named host directories (--bind name=path).
	// Relative paths are anchored once to WorkDir.
	Bindings map[string]string
	// WorkDir anchors relative paths; default: the process working
	// directory.
	WorkDir string
	// Locked forces lock mode; an entry cannot turn it off.
	Locked bool
	// Overrides are typed per-run overrides (CLI flags map to these).
	Overrides []Override
	// LookupEnv reads declared environment bindings. Nil means no
	// environment: undeclared variables are never read either way.
	LookupEnv func(name string) (string, bool)
	// HostTrace says the host supplies its own trace destination (the CLI's
	// --trace), so trace.capture_content needs no trace.path.
	HostTrace bool
	// LoopbackHTTP lets http://127.0.0.1, http://[::1] and
	// http://localhost URLs stand in for remote endpoints: a host test
	// fixture. Never honoured under lock.
	LoopbackHTTP bool
	// UserConfig and WorkspaceConfig name optional preference files
	// (options only: no imports, credentials, profiles, authority or
	// deployment controls), applied above the built-in defaults and
	// below Config: defaults < user < workspace < entry < environment <
	// Overrides. A locked deployment refuses both; lock is decided by
	// Config and Locked before either is opened.
	UserConfig, WorkspaceConfig string
}

// Override is one typed per-run assignment, such as
// {Target: "limits.max_tool_calls", Value: int64(3)}.
type Override struct {
	// Target is the option's dotted path below options.
	Target string
	// Value is the option's typed value, as the TOML key holds it: an
	// int64, a bool, a string or a list.
	Value any
}

// config is o as the deployment language takes it.
func (o LoadOptions) config() config.LoadOptions {
	c := config.LoadOptions{
		Config: o.Config, ConfigRoot: o.ConfigRoot, Profile: o.Profile, Bindings: o.Bindings,
		WorkDir: o.WorkDir, Locked: o.Locked, LookupEnv: o.LookupEnv, HostTrace: o.HostTrace, LoopbackHTTP: o.LoopbackHTTP,
		UserConfig: o.UserConfig, WorkspaceConfig: o.WorkspaceConfig,
	}
	for _, ov := range o.Overrides {
		c.Overrides = append(c.Overrides, config.Override{Target: ov.Target, Value: ov.Value})
	}
	return c
}

// ErrConfig is the sentinel kind of every deployment error,
// [deployment.ErrInvalid]: errors.Is(err, pablo.ErrConfig) holds for each
// *[deployment.Error] and *[deployment.PathError].
var ErrConfig = deployment.ErrInvalid

// Deployment is a resolved deployment: every import, profile, environment
// binding and override applied, every default filled in, every reference
// checked. It is immutable; its Fingerprint identifies its meaning. What
// its methods return is the caller's own copy: changing it changes neither
// the deployment, its fingerprint nor the runtimes built from it.
//
// Its methods do two jobs. Composition builds what a host runs: NewRuntime
// (and the parts it is made of, for a host that assembles its own:
// Authority, Resolver, MCPOptions, A2AOptions, A2ARunner, SkillOptions),
// OpenTrace and TraceSink. Inspection answers what it would do without
// running a task, in the types of package deployment: Options,
// Credentials, ModelProfiles, ParseShellCommand, CheckPaths, Decide,
// Graph and Why, and the live checks CheckSandbox, ProbeSandbox and
// ProbeProvider.
type Deployment struct {
	// Fingerprint is "sha256:" over the canonical resolved configuration.
	// It is a copy: the runtime records the deployment's own.
	Fingerprint string
	// InputFingerprint hashes the ordered sources that produced it.
	InputFingerprint string

	c *config.Deployment
	// reserved holds the trace files this deployment opened: the workspace
	// tools of its runtimes never read, write or list them. It is the one
	// mutable part of a Deployment, and safe for concurrent use.
	reserved *fstools.Reserved
	// clientSecrets are the values of a client's MCP servers, by their
	// reserved credential names (WithClientMCPServers).
	clientSecrets map[string]clientSecret
}

// Load reads, composes and resolves a deployment. It reads no credential,
// starts nothing and touches no network. Every failure is a
// *[deployment.Error].
// It is LoadContext with a context that is never cancelled.
func Load(opts LoadOptions) (*Deployment, error) {
	return LoadContext(context.Background(), opts)
}

// LoadContext is Load under ctx: every file is opened without blocking (a
// FIFO or a device is refused at once) and ctx ends a read in progress.
//
// A deployment error's message never holds a suspected secret: a value
// written where a credential name belongs (a token pasted as a header)
// is masked in the diagnostic like tool output.
func LoadContext(ctx context.Context, opts LoadOptions) (*Deployment, error) {
	c, err := config.LoadContext(ctx, opts.config())
	if err != nil {
		return nil, err
	}
	return &Deployment{Fingerprint: c.Fingerprint, InputFingerprint: c.InputFingerprint, c: c, reserved: &fstools.Reserved{}}, nil
}

// Ref is what identifies d to a peer or a record: the schema version, the
// deployment contract revision this build implements and d's fingerprint.
// ACP's initialize result and every root task's DeploymentRef carry it.
func (d *Deployment) Ref() *event.DeploymentRef {
	return &event.DeploymentRef{SchemaVersion: 1, ContractRevision: config.ContractRevision, Fingerprint: d.c.Fingerprint}
}

// Locked reports whether the deployment runs in lock mode.
func (d *Deployment) Locked() bool { return d.c.Locked() }

// Name is the entry file's deployment.name, "" when it gives none: the
// name a host that shows several deployments (pablo inspect) gives this
// one.
func (d *Deployment) Name() string { return d.c.Name() }

// AllowedRunOverrides lists what a run may override.
func (d *Deployment) AllowedRunOverrides() []string { return d.c.AllowedRunOverrides() }

// Credentials returns the declared credentials by name, the caller's own
// copy.
func (d *Deployment) Credentials() map[string]deployment.Credential {
	refs := d.c.Credentials()
	out := make(map[string]deployment.Credential, len(refs))
	for name, ref := range refs {
		c := deployment.Credential{Consumer: ref.Consumer, Sources: make([]deployment.CredentialSource, 0, len(ref.Sources))}
		for _, src := range ref.Sources {
			cs := deployment.CredentialSource{Kind: src.Kind, Name: src.Name, Encoding: src.Encoding, Key: src.Key}
			if src.Path != nil {
				cs.Path = src.Path.String()
			}
			c.Sources = append(c.Sources, cs)
		}
		out[name] = c
	}
	return out
}

// CanonicalJSON returns the canonical encoding of the resolved configuration
// (the bytes the fingerprint covers, less the version envelope).
func (d *Deployment) CanonicalJSON() []byte { return d.c.CanonicalJSON() }

// Explain returns the resolved inspection envelope: schema_version,
// contract_revision, config, fingerprint, sources, provenance and
// input_fingerprint, as compact canonical JSON.
func (d *Deployment) Explain() []byte { return d.c.Explain() }

// Render returns a self-contained TOML document with the same meaning:
// schema_version first, then authority, credentials, deployment and options,
// every default written out. Bindings stay bindings; no private absolute path
// is written. Loading the result yields the same Fingerprint.
func (d *Deployment) Render() ([]byte, error) { return d.c.Render() }

// Workspace resolves run.workspace to a real absolute directory.
func (d *Deployment) Workspace() (string, error) { return d.c.Workspace() }

// resolvePath resolves a path object of the deployment (such as
// options.trace.path) to a real absolute path that stays inside its
// root, symlinks included. The target need not exist; its deepest existing
// ancestor must resolve inside the root.
func (d *Deployment) resolvePath(p config.PathRef) (string, error) { return d.c.ResolvePath(p) }

// CheckPaths resolves every path object of the deployment against its
// bindings, as a runtime would, reading, starting and sending nothing, so
// offline commands (config validate) judge what run would refuse. All
// failures are returned, joined; each is a *[deployment.PathError].
func (d *Deployment) CheckPaths() error { return d.c.CheckPaths() }

// Authority builds the task authority: the configured catalog, then every
// authority layer, then ordinary policy. Omitted policy dimensions take the
// reference defaults: tools allow, the /bin/sh launcher allow, read roots
// allow inside the workspace, write roots deny unless write is opted in.
func (d *Deployment) Authority() (*authority.Set, error) { return d.c.Authority() }

// NativeTools lists the native tools this deployment enables.
func (d *Deployment) NativeTools() []authority.ID { return d.c.NativeTools() }

// Resolver returns a credential resolver for this deployment: each record
// bound to exactly the destinations configuration gives it.
func (d *Deployment) Resolver(opts authority.ResolverOptions) (*authority.Resolver, error) {
	return d.c.Resolver(opts)
}

// ParseShellCommand parses and resolves command as shell.run's literal
// command policy does, without running anything; ok is false when no
// policy configures commands. Whether the command is allowed is
// [Deployment.Decide]'s answer (with its rule), not this.
func (d *Deployment) ParseShellCommand(command string) (c deployment.ShellCommand, ok bool) {
	pol, err := d.c.ShellPolicy()
	if err != nil || pol == nil {
		return deployment.ShellCommand{}, false
	}
	dec := pol.Check(command)
	c.Argv = dec.Argv
	if dec.Executable != nil {
		c.Executable, c.Canonical = dec.Executable.Path, dec.Executable.Canonical
	}
	return c, true
}
