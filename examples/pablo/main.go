// Command pablo is Pablo's reference host: a thin CLI over the library that
// validates and inspects deployments, decides policy questions offline and
// runs tasks.
//
//	pablo config validate|explain|render --config F --bind name=DIR ...
//	pablo policy check CAPABILITY_ID --config F --bind name=DIR ... [--json]
//
// Exit codes: 0 success, 1 a runtime issue or a non-completed task, 2 invalid
// arguments or configuration (stdout stays empty), 130 user cancellation.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/ledger"
)

// Version is the executable version.
const Version = "0.1.0-dev"

// host is what a command sees of the process: testable without one.
type host struct {
	// stdin is read only by `pablo acp --stdio`, and, when it is a
	// terminal, by `pablo run`'s approval prompt; nil reads nothing.
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	workDir        string
	// clock and newID, when set, replace the clock and the ID source of
	// the tasks a command runs: tests make outputs reproducible byte for
	// byte.
	clock ledger.Clock
	newID func() string
	// bubblewrap, when set, is the bubblewrap executable doctor, graph
	// and why check a required sandbox with (tests name one that does
	// not exist); empty is the default path.
	bubblewrap string
	// forwarder is this executable, the egress forwarder of shell.run
	// under network allowlist ("" when it cannot be found).
	forwarder string
	// configDir, when set, replaces the user's configuration directory
	// (where the OAuth token store lives): tests keep their own.
	configDir string
}

func main() {
	// Inside a network allowlist's sandbox this binary is the egress
	// forwarder (pablo.EgressForwarderMain), and never returns.
	pablo.EgressForwarderMain()
	// Before any credential is read from the environment: from here on no
	// other process of this user can read this one's environment through
	// /proc. A kernel that refuses leaves the risk the README describes.
	if err := dropDumpable(); err != nil {
		fmt.Fprintf(os.Stderr, "pablo: warning: could not make the process non-dumpable (%v): processes of the same user can read this one's environment\n", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	wd, _ := os.Getwd()
	exe, _ := os.Executable()
	code := run(ctx, os.Args[1:], &host{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv, workDir: wd, forwarder: exe})
	stop()
	os.Exit(code)
}

// stdinIsTerminal reports whether the host's standard input is a terminal.
func stdinIsTerminal(h *host) bool {
	f, ok := h.stdin.(*os.File)
	return ok && isTerminal(f)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, h *host) int {
	if len(args) == 0 && !stdinIsTerminal(h) {
		// Off a terminal nothing interactive can start: say what to run
		// and fail, so a script that forgot its command does not pass.
		var b strings.Builder
		writeUsage(&b)
		return report(usagef("pablo needs a command\n\n%s", strings.TrimRight(b.String(), "\n")), h)
	}
	if len(args) == 0 && tuiCapable(h) {
		// A capable terminal: the interactive UI, as the reference.
		args = []string{"tui"}
	}
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return report(helpFor(strings.Join(args[1:], " ")), h)
		}
		writeUsage(h.stdout)
		return 0
	}
	if isGroup(args[0]) && (len(args) == 1 || args[1] == "--help" || args[1] == "-h") {
		if len(args) == 1 {
			var b strings.Builder
			writeGroupUsage(&b, args[0])
			return report(usagef("pablo %s needs a subcommand\n\n%s", args[0], strings.TrimRight(b.String(), "\n")), h)
		}
		writeGroupUsage(h.stdout, args[0])
		return 0
	}
	// A command asked for --json answers in JSON on failure too: when it
	// wrote nothing to stdout itself, report writes one error document.
	// Under the count, each stream escapes what reaches a terminal.
	jsonMode := wantsJSON(args)
	stdout, stderr := newStream(h.stdout, printsJSON(args)), newStream(h.stderr, false)
	defer stderr.flush()
	defer stdout.flush()
	out := &countingWriter{w: stdout}
	h = &host{stdin: h.stdin, stdout: out, stderr: stderr, lookupEnv: h.lookupEnv, workDir: h.workDir, clock: h.clock, newID: h.newID, bubblewrap: h.bubblewrap, forwarder: h.forwarder}
	var err error
	switch args[0] {
	case "version", "--version":
		if _, err = parseArgs(args[1:], "version"); err == nil {
			fmt.Fprintf(h.stdout, "pablo %s\n", Version)
		}
	case "config":
		err = configCommand(ctx, args[1:], h)
	case "policy":
		err = policyCommand(ctx, args[1:], h)
	case "run":
		err = runCommand(ctx, args[1:], h)
	case "tui":
		err = tuiCommand(ctx, args[1:], h)
	case "resume":
		err = resumeCommand(ctx, args[1:], h)
	case "demo":
		err = demoCommand(ctx, args[1:], h)
	case "init":
		err = initCommand(ctx, args[1:], h)
	case "ledger":
		err = ledgerCommand(ctx, args[1:], h)
	case "mcp":
		err = mcpCommand(ctx, args[1:], h)
	case "a2a":
		err = a2aCommand(ctx, args[1:], h)
	case "memory":
		err = memoryCommand(ctx, args[1:], h)
	case "skills":
		err = skillsCommand(ctx, args[1:], h)
	case "doctor":
		err = doctorCommand(ctx, args[1:], h)
	case "graph":
		err = graphCommand(ctx, args[1:], h)
	case "why":
		err = whyCommand(ctx, args[1:], h)
	case "acp":
		err = acpCommand(ctx, args[1:], h)
	case "inspect":
		err = inspectCommand(ctx, args[1:], h)
	default:
		err = shorthand(ctx, args, h)
	}
	if err != nil && jsonMode && out.n == 0 {
		writeErrorJSON(h, args, err)
	}
	return report(err, h)
}

// wantsJSON reports whether a command line that takes --json gave it.
func wantsJSON(args []string) bool {
	path := args[0]
	if len(args) > 1 && isGroup(args[0]) {
		path += " " + args[1]
	}
	c, ok := lookup(path)
	if !ok {
		return false
	}
	takes := false
	for _, f := range c.flags {
		takes = takes || f.name == "json"
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if a == "--json" {
			return takes
		}
	}
	return false
}

// printsJSON reports whether a command line prints a JSON document to
// stdout: --json, or `config explain`, whose envelope is JSON already.
func printsJSON(args []string) bool {
	return wantsJSON(args) || len(args) > 1 && args[0] == "config" && args[1] == "explain"
}

// countingWriter counts what a command wrote to stdout.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// helpFor answers `pablo help COMMAND`.
func helpFor(path string) error {
	if _, ok := lookup(path); ok {
		return &helpRequest{path: path}
	}
	if isGroup(path) {
		return &helpRequest{path: path}
	}
	return usagef("no command %q (see pablo --help)", path)
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// report prints err to stderr and maps it to an exit code.
func report(err error, h *host) int {
	if err == nil {
		return 0
	}
	var help *helpRequest
	if errors.As(err, &help) {
		if c, ok := lookup(help.path); ok {
			c.writeHelp(h.stdout)
		} else {
			writeGroupUsage(h.stdout, help.path)
		}
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(h.stderr, "pablo: %s%s\n", message(ee.err), bindHint(ee.err))
		}
		return ee.code
	}
	var ue *usageError
	var ce *deployment.Error
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(h.stderr, "pablo: %s\n", message(ue))
		return 2
	case errors.As(err, &ce):
		fmt.Fprintf(h.stderr, "pablo: %s%s\n", message(ce), bindHint(err))
		return 2
	case errors.Is(err, pablo.ErrConfig):
		fmt.Fprintf(h.stderr, "pablo: %s%s\n", message(err), bindHint(err))
		return 2
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(h.stderr, "pablo: cancelled")
		return 130
	}
	fmt.Fprintf(h.stderr, "pablo: %s%s\n", message(err), bindHint(err))
	return 1
}

// message is err's text without the library's own "pablo: " prefix, which
// the CLI already prints.
func message(err error) string { return strings.TrimPrefix(err.Error(), "pablo: ") }

// bindHint is the CLI's spelling of how to give a binding that an error
// names: the library speaks of bindings, the CLI of --bind.
func bindHint(err error) string {
	var ce *deployment.Error
	var pe *deployment.PathError
	switch {
	case errors.As(err, &ce) && ce.Binding != "":
		return fmt.Sprintf(" (--bind %s=DIR)", ce.Binding)
	case errors.As(err, &pe) && pe.Unbound:
		return fmt.Sprintf(" (give it with --bind %s=DIR)", pe.Ref.Name)
	}
	return ""
}

// loadDeployment reads the bootstrap flags and loads the deployment.
func loadDeployment(ctx context.Context, p *parsed, h *host, overrides []pablo.Override) (*pablo.Deployment, error) {
	return loadDeploymentBound(ctx, p, h, overrides, nil)
}

// loadDeploymentBound is loadDeployment with the bindings of rebind in
// place of the command line's (an ACP session's workspace).
func loadDeploymentBound(ctx context.Context, p *parsed, h *host, overrides []pablo.Override, rebind map[string]string) (*pablo.Deployment, error) {
	cfg := p.one("config")
	if cfg == "" {
		return nil, usagef("--config is required")
	}
	binds := map[string]string{}
	for _, b := range p.values["bind"] {
		name, dir, ok := strings.Cut(b, "=")
		if !ok || name == "" || dir == "" {
			return nil, usagef("--bind takes NAME=DIR, got %q", b)
		}
		if _, dup := binds[name]; dup {
			return nil, usagef("--bind %s is given twice", name)
		}
		binds[name] = dir
	}
	if ws := p.one("workspace"); ws != "" && !p.noConfig {
		if _, dup := binds["workspace"]; dup {
			return nil, usagef("--workspace and --bind workspace=DIR name the same binding: give one")
		}
		binds["workspace"] = ws
	}
	for name, dir := range rebind {
		binds[name] = dir
	}
	return pablo.LoadContext(ctx, pablo.LoadOptions{
		Config:          cfg,
		ConfigRoot:      p.one("config-root"),
		Profile:         p.one("profile"),
		Bindings:        binds,
		WorkDir:         h.workDir,
		Locked:          p.bools["locked"],
		Overrides:       overrides,
		LookupEnv:       h.lookupEnv,
		LoopbackHTTP:    p.bools["loopback-http"],
		HostTrace:       p.one("trace") != "",
		UserConfig:      p.one("user-config"),
		WorkspaceConfig: p.one("workspace-config"),
	})
}
