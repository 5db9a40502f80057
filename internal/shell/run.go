package shell

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/internal/sandbox"
)

// Host defaults from the reference (§1.10 limits).
const (
	DefaultMaxToolDuration = 900 * time.Second
	DefaultMaxOutputBytes  = 8 << 20
	// Launcher is the only program shell.run starts directly.
	Launcher = "/bin/sh"
	// literalScript executes the positional parameters as given, so the
	// shell interprets nothing a second time.
	literalScript = `exec "$@"`
)

// InputSchema is the closed JSON Schema of shell.run's arguments.
const InputSchema = `{"type":"object","additionalProperties":false,"required":["command","cwd"],"properties":{` +
	`"command":{"type":"string","minLength":1},` +
	`"cwd":{"type":"string","minLength":1},` +
	`"timeout_ms":{"type":"integer","minimum":1},` +
	`"max_output_bytes":{"type":"integer","minimum":1},` +
	`"env":{"type":"object","additionalProperties":{"type":"string"}}}}`

// Sentinel error kinds of Run, besides ErrDenied.
var (
	// ErrInvalidOptions: the Options given to New cannot be used.
	ErrInvalidOptions = errors.New("shell: invalid options")
	// ErrInvalidArguments: the request's arguments are malformed.
	ErrInvalidArguments = errors.New("shell: invalid shell.run arguments")
	// ErrTimeout: the command ran past its duration and was killed.
	ErrTimeout = errors.New("shell: command timed out")
	// ErrCancelled: the caller's context ended the command.
	ErrCancelled = errors.New("shell: command cancelled")
	// ErrOutputLimit: the command's output overflowed the capture bound and
	// the command was stopped (the run ends with tool_output_bytes).
	ErrOutputLimit = errors.New("shell: command output exceeded the capture bound")
	// ErrCleanup: the command's process group could not be proven gone
	// (tool_cleanup). It is also proc.ErrCleanup.
	ErrCleanup = errors.New("shell: command cleanup could not be proven")
	// ErrSpawn: the launcher could not be started.
	ErrSpawn = errors.New("shell: command could not be started")
	// ErrSandbox: the command's sandbox could not be set up, so the
	// command never ran (the run ends with spawn_failed). It comes with a
	// *sandbox.SetupError.
	ErrSandbox = errors.New("shell: the command's sandbox could not be set up")
)

// ArgumentError reports a malformed shell.run argument.
type ArgumentError struct {
	Field   string
	Problem string
}

// Error implements error.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("shell: argument %s: %s", e.Field, e.Problem)
}

// Unwrap makes errors.Is(err, ErrInvalidArguments) hold.
func (e *ArgumentError) Unwrap() error { return ErrInvalidArguments }

// RunError reports a command that started but did not end normally. Run
// returns the (partial) ShellResult alongside it.
type RunError struct {
	// Kind is ErrTimeout, ErrCancelled, ErrOutputLimit, ErrCleanup,
	// ErrSpawn or ErrSandbox.
	Kind error
	// Status is the reference's tool status for the kind: "timed_out",
	// "cancelled", "output_limit", "cleanup_failed" or "spawn_failed"
	// (ErrSpawn and ErrSandbox).
	Status string
	// Err is the cause, when there is one (the context error, the
	// *proc.CleanupError, the start error).
	Err error
}

// Error implements error.
func (e *RunError) Error() string {
	if e.Err == nil {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Err.Error()
}

// Unwrap returns the kind and the cause.
func (e *RunError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Options configures a Runner: the host's side of shell.run.
type Options struct {
	// Workspace is the workspace directory (required); cwd arguments
	// resolve inside it.
	Workspace string
	// Policy is the literal command policy, or nil when no layer configures
	// shell.commands (then commands go to /bin/sh -c unparsed).
	Policy *Policy
	// CheckCwd, when set, decides the canonical workspace-relative cwd
	// against shell.cwd_roots. A decision that is not Allowed denies.
	CheckCwd func(rel string) Decision
	// Environment is shell.environment.
	Environment Environment
	// MaxToolDuration is the host tool duration (max_tool_duration_ms);
	// zero means DefaultMaxToolDuration. A request's timeout_ms narrows it.
	MaxToolDuration time.Duration
	// MaxOutputBytes is the host output bound (max_tool_output_bytes); zero
	// means DefaultMaxOutputBytes. A request's max_output_bytes narrows it.
	MaxOutputBytes int64
	// CleanupAllowance bounds process-group teardown; zero means
	// proc.DefaultCleanupAllowance.
	CleanupAllowance time.Duration
	// DirectExec, under a Policy only, executes the resolved program
	// directly instead of through `/bin/sh -c 'exec "$@"'`. It saves one
	// exec of the shell per command (about half a millisecond), and there
	// is still no second interpretation. What changes: the launcher is the
	// program itself (so a `policy.executables` check on /bin/sh no longer
	// describes what runs), a file without a #! line that is not a binary
	// fails with "exec format error" instead of being run as a script, and
	// no PWD is set. Off by default, as in the reference.
	DirectExec bool
	// Sandbox is the bubblewrap sandbox every command runs in. The zero
	// value is the default: required, the workspace read-only, no
	// network. Where no sandbox can be made, a required one fails closed:
	// every request is denied (builtin.sandbox.unavailable). Mode
	// sandbox.Off runs commands unconfined: the host's explicit choice.
	Sandbox sandbox.Profile
	// Launcher is bubblewrap; nil resolves sandbox.DefaultPath once, in
	// New, when the sandbox is required.
	Launcher *sandbox.Launcher
	// EgressForwarder is needed to run under network allowlist (Run fails
	// each command with ErrSandbox without it; Decide does not): the absolute
	// path of a binary that calls egress.ForwarderMain first thing in main
	// (the host's own executable). It runs inside the sandbox as the
	// command's parent and carries its proxy connections out (package
	// egress says why).
	EgressForwarder string
	// EgressResolver resolves the names the allowlist's proxy carries;
	// nil means net.DefaultResolver.
	EgressResolver egress.Resolver
}

// Runner executes shell.run requests. It is immutable (but for its
// launcher's one live check) and safe for concurrent use.
type Runner struct {
	opts      Options
	workspace string
	supported bool
	sandbox   sandbox.Profile
	launcher  *sandbox.Launcher
}

// New validates opts and returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Workspace == "" {
		return nil, fmt.Errorf("%w: Workspace is required", ErrInvalidOptions)
	}
	if opts.MaxToolDuration < 0 || opts.MaxOutputBytes < 0 || opts.CleanupAllowance < 0 {
		return nil, fmt.Errorf("%w: MaxToolDuration, MaxOutputBytes and CleanupAllowance must not be negative", ErrInvalidOptions)
	}
	if opts.MaxToolDuration == 0 {
		opts.MaxToolDuration = DefaultMaxToolDuration
	}
	if opts.MaxOutputBytes == 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if err := opts.Environment.validate(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return nil, fmt.Errorf("%w: Workspace: %v", ErrInvalidOptions, err)
	}
	ws, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: Workspace must be an existing directory: %v", ErrInvalidOptions, err)
	}
	if err := opts.Sandbox.Validate(); err != nil {
		return nil, fmt.Errorf("%w: Sandbox: %v", ErrInvalidOptions, err)
	}
	if opts.EgressForwarder != "" && !filepath.IsAbs(opts.EgressForwarder) {
		return nil, fmt.Errorf("%w: EgressForwarder %q must be an absolute path", ErrInvalidOptions, opts.EgressForwarder)
	}
	r := &Runner{opts: opts, workspace: ws, supported: runtime.GOOS == "linux" || runtime.GOOS == "darwin",
		sandbox: opts.Sandbox.Normalized(), launcher: opts.Launcher}
	if r.sandbox.Mode != sandbox.Off && r.launcher == nil {
		r.launcher = sandbox.NewLauncher("")
	}
	return r, nil
}

// Sandbox is the sandbox every command of r runs in.
func (r *Runner) Sandbox() sandbox.Profile { return r.sandbox }

// SandboxReady reports whether r's sandbox can be made on this host: nil
// when it is off or bubblewrap works here (one live check, done once), the
// *sandbox.UnavailableError otherwise.
func (r *Runner) SandboxReady(ctx context.Context) error {
	if r.sandbox.Mode == sandbox.Off {
		return nil
	}
	return r.launcher.Ready(ctx)
}

// Request holds shell.run's arguments (reference §4.3).
type Request struct {
	// Command is the command line (required).
	Command string `json:"command"`
	// Cwd is the working directory, relative to the workspace (required).
	Cwd string `json:"cwd"`
	// TimeoutMs narrows the host tool duration; 0 means not given.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
	// MaxOutputBytes narrows the host output bound; 0 means not given.
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
	// Env adds PABLO_TASK_* variables.
	Env map[string]string `json:"env,omitempty"`
	// IdempotencyKey, when set, is the call's stable key, given to the
	// command as [IdempotencyEnv]: the runtime's, never the model's.
	IdempotencyKey string `json:"-"`
	// OnOutput, when set, receives the captured output as it arrives,
	// coalesced into chunks of at most 4 KiB at most 16 ms apart. The
	// chunks of a stream concatenate to exactly the bytes behind the final
	// result; OnOutput is never called after Run returns.
	OnOutput func(stream string, chunk []byte) `json:"-"`
	// OnEgress, when set, receives each decision of the network
	// allowlist's proxy for this command (the host records it), from the
	// proxy's goroutines, never after Run returns; an allowed request
	// whose decision it fails to record (an error) is refused.
	OnEgress func(egress.Decision) error `json:"-"`
}

// ShellResult is what a command left behind (reference §4.3).
type ShellResult struct {
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	ExitCode        *int    `json:"exit_code"`
	Signal          *string `json:"signal"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	// StdoutLossy and StderrLossy report that non-UTF-8 bytes were
	// replaced with U+FFFD.
	StdoutLossy bool `json:"stdout_lossy"`
	StderrLossy bool `json:"stderr_lossy"`
}

// plan is a request checked and ready to launch.
type plan struct {
	path    string
	args    []string
	env     []string
	dir     string
	timeout time.Duration
	bound   int64
	sandbox sandbox.Profile
}

// prepare runs every check that comes before launch, in the reference's
// order: platform, arguments, environment, workspace, cwd roots, command.
func (r *Runner) prepare(req Request) (plan, Decision, error) {
	if !r.supported {
		return plan{}, Decision{}, denial(ruleUnsupportedOS, reasonUnsupportedOS)
	}
	switch {
	case req.Command == "":
		return plan{}, Decision{}, &ArgumentError{Field: "command", Problem: "is required and must not be empty"}
	case strings.IndexByte(req.Command, 0) >= 0:
		return plan{}, Decision{}, &ArgumentError{Field: "command", Problem: "must not contain NUL"}
	case req.Cwd == "":
		return plan{}, Decision{}, &ArgumentError{Field: "cwd", Problem: "is required and must not be empty; use \".\" for the workspace"}
	case req.TimeoutMs < 0:
		return plan{}, Decision{}, &ArgumentError{Field: "timeout_ms", Problem: "must be positive"}
	case req.MaxOutputBytes < 0:
		return plan{}, Decision{}, &ArgumentError{Field: "max_output_bytes", Problem: "must be positive"}
	}
	env, problem := r.opts.Environment.build(req.Env)
	if problem != "" {
		return plan{}, Decision{}, denial(ruleEnvironment, reasonEnvironment)
	}
	if req.IdempotencyKey != "" {
		env = append(env, IdempotencyEnv+"="+req.IdempotencyKey)
	}
	dir, rel, err := resolveCwd(r.workspace, req.Cwd)
	if err != nil {
		return plan{}, Decision{}, err
	}
	if r.opts.CheckCwd != nil {
		if d := r.opts.CheckCwd(rel); !d.Allowed {
			if d.Reason == "" {
				d.Reason = reasonCwdRootsDenied
			}
			return plan{}, Decision{}, &DeniedError{Decision: d}
		}
	}
	if r.sandbox.Mode != sandbox.Off {
		if err := r.launcher.Err(); err != nil {
			return plan{}, Decision{}, sandboxDenial(err)
		}
	}
	path, args := Launcher, []string(nil)
	var allowed Decision
	if r.opts.Policy == nil {
		args = []string{Launcher, "-c", req.Command}
	} else {
		d := r.opts.Policy.Check(req.Command)
		if !d.Allowed {
			return plan{}, Decision{}, &DeniedError{Decision: d}
		}
		allowed = d
		if r.opts.DirectExec {
			path = d.Executable.Path
			args = append([]string{d.Executable.Path}, d.Argv[1:]...)
		} else {
			args = make([]string, 0, 4+len(d.Argv))
			args = append(args, Launcher, "-c", literalScript, "sh", d.Executable.Path)
			args = append(args, d.Argv[1:]...)
		}
	}
	p := plan{path: path, args: args, env: env, dir: dir, timeout: r.opts.MaxToolDuration, bound: r.opts.MaxOutputBytes, sandbox: r.sandbox}
	if allowed.Executable != nil && r.sandbox.Mode != sandbox.Off {
		// A program the policy resolved outside the system directories
		// and the workspace is shown, read-only, at its own path.
		for _, f := range []string{allowed.Executable.Canonical, allowed.Executable.Path} {
			if !sandbox.IsSystemPath(f) && !within(r.workspace, f) && !slices.Contains(p.sandbox.ReadPaths, f) {
				p.sandbox.ReadPaths = append(slices.Clip(p.sandbox.ReadPaths), f)
			}
		}
	}
	sb := r.sandbox
	allowed.Sandbox = &sb
	if req.TimeoutMs > 0 {
		p.timeout = min(p.timeout, time.Duration(req.TimeoutMs)*time.Millisecond)
	}
	if req.MaxOutputBytes > 0 {
		p.bound = min(p.bound, req.MaxOutputBytes)
	}
	return p, allowed, nil
}

// Decide runs every check Run makes before launch, in the same order, and
// starts nothing: the *DeniedError's decision for a denied request, the
// literal command policy's allowing decision otherwise (a zero Decision
// with Allowed set when no command policy is configured). Malformed
// requests fail with *ArgumentError, as in Run.
func (r *Runner) Decide(req Request) (Decision, error) {
	_, d, err := r.prepare(req)
	var de *DeniedError
	if errors.As(err, &de) {
		return de.Decision, nil
	}
	if err != nil {
		return Decision{}, err
	}
	d.Allowed = true
	return d, nil
}

// DecideContext is Decide with the sandbox's live check (done once per
// runner, a few milliseconds): where a required sandbox cannot be made on
// this host, every request is denied (builtin.sandbox.unavailable), as Run
// would deny it.
func (r *Runner) DecideContext(ctx context.Context, req Request) (Decision, error) {
	if err := r.SandboxReady(ctx); err != nil {
		return sandboxDenial(err).Decision, nil
	}
	return r.Decide(req)
}

// Run checks and executes one shell.run request in its own process group
// and returns its result. Errors: *ArgumentError (ErrInvalidArguments),
// *DeniedError (ErrDenied) — both before anything starts — and *RunError
// (ErrTimeout, ErrCancelled, ErrOutputLimit, ErrCleanup, ErrSpawn), which
// comes with the partial result when the command ran. A nonzero exit is an
// ordinary result, not an error.
func (r *Runner) Run(ctx context.Context, req Request) (*ShellResult, error) {
	p, _, err := r.prepare(req)
	if err != nil {
		return nil, err
	}
	if err := r.SandboxReady(ctx); err != nil {
		return nil, sandboxDenial(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	spec := sandbox.Spec{Path: p.path, Args: p.args, Env: p.env, Workspace: r.workspace, Dir: p.dir}
	if p.sandbox.Mode != sandbox.Off && p.sandbox.Network == sandbox.Allowlist {
		if r.opts.EgressForwarder == "" {
			return nil, &RunError{Kind: ErrSandbox, Status: "spawn_failed", Err: errNoForwarder}
		}
		socket, stop, err := r.serveEgress(ctx, p.sandbox.Allow, req.OnEgress)
		if err != nil {
			return nil, &RunError{Kind: ErrSandbox, Status: "spawn_failed", Err: err}
		}
		defer stop()
		spec.Egress = &sandbox.Egress{Socket: socket, Forwarder: r.opts.EgressForwarder}
	}
	c, err := r.launcher.Command(p.sandbox, spec)
	if err != nil {
		var ue *sandbox.UnavailableError
		if errors.As(err, &ue) {
			return nil, sandboxDenial(err)
		}
		return nil, &RunError{Kind: ErrSandbox, Status: "spawn_failed", Err: err}
	}
	defer c.Close()
	process, err := c.Start(runCtx, proc.Options{
		CleanupAllowance: r.opts.CleanupAllowance,
		MaxStdout:        p.bound,
		MaxStderr:        p.bound,
		MaxTotal:         p.bound,
		StopOnOverflow:   true,
		OnOutput:         req.OnOutput,
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, &RunError{Kind: ErrCancelled, Status: "cancelled", Err: ctxErr}
		}
		return nil, &RunError{Kind: ErrSpawn, Status: "spawn_failed", Err: err}
	}
	res, cleanupErr := process.Wait()
	setupErr := c.Finish(res.Stderr)
	out := toShellResult(res)
	switch {
	case setupErr != nil && res.End == proc.EndExited && cleanupErr == nil:
		return nil, &RunError{Kind: ErrSandbox, Status: "spawn_failed", Err: setupErr}
	case cleanupErr != nil:
		return out, &RunError{Kind: ErrCleanup, Status: "cleanup_failed", Err: cleanupErr}
	case res.End == proc.EndOutputLimit || res.StdoutTruncated || res.StderrTruncated:
		return out, &RunError{Kind: ErrOutputLimit, Status: "output_limit"}
	case res.End == proc.EndCancelled && ctx.Err() != nil:
		return out, &RunError{Kind: ErrCancelled, Status: "cancelled", Err: ctx.Err()}
	case res.End == proc.EndCancelled:
		return out, &RunError{Kind: ErrTimeout, Status: "timed_out", Err: context.DeadlineExceeded}
	}
	return out, nil
}

// errNoForwarder is why a command under network allowlist cannot run.
var errNoForwarder = errors.New("network allowlist needs the egress forwarder: the host names its own executable, which calls egress.ForwarderMain first thing in main (pablo.HostOptions.EgressForwarder)")

// serveEgress starts the allowlist's proxy for one command on a Unix
// socket of its own; stop ends it and waits for its connections.
func (r *Runner) serveEgress(ctx context.Context, allow []string, record func(egress.Decision) error) (string, func(), error) {
	return egress.ServeUnix(ctx, egress.Options{Allow: allow, Resolver: r.opts.EgressResolver, Record: record})
}

func toShellResult(res *proc.Result) *ShellResult {
	out := &ShellResult{StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated}
	out.Stdout, out.StdoutLossy = lossy(res.Stdout)
	out.Stderr, out.StderrLossy = lossy(res.Stderr)
	if res.Signal != "" {
		s := res.Signal
		out.Signal = &s
	} else if res.ExitCode >= 0 {
		c := res.ExitCode
		out.ExitCode = &c
	}
	return out
}

// lossy converts captured bytes to a string, replacing invalid UTF-8.
func lossy(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), true
}
