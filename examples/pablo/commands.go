package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// command is one leaf command of the CLI. The table of commands is the one
// source of the flag parser, of every --help text and of the README's CLI
// tables (a test compares them), so the three cannot drift.
type command struct {
	// path is the command's words: "run", "config validate".
	path string
	// args is the positional synopsis: `"TASK"`, "[TASK_ID]".
	args    string
	summary string
	// deployment says the command loads a deployment and so takes the
	// deploymentFlags before its own.
	deployment bool
	flags      []flag
	// notes are extra lines of help: what stdout holds, exit codes.
	notes []string
	// schemas are the files of docs/schemas that describe what --json
	// prints: on success first, then on failure when that differs. Help
	// names them; a test validates real outputs against them.
	schemas []string
}

// flag is one flag of a command.
type flag struct {
	name string
	// arg is the value's placeholder; empty for a switch.
	arg    string
	repeat bool
	// help is one line: what the flag does, its range and its default.
	help string
}

// deploymentFlags are the bootstrap flags of every command that loads a
// deployment.
func deploymentFlags() []flag {
	return []flag{
		{name: "config", arg: "FILE", help: "the deployment file (required; run and doctor without it write one from --provider, --model and --workspace)"},
		{name: "config-root", arg: "DIR", help: "the directory every imported file must lie in (default: the config file's directory)"},
		{name: "profile", arg: "NAME", help: "the profile to apply (default: the file's own `profile`)"},
		{name: "bind", arg: "NAME=DIR", repeat: true, help: "a named host directory that path objects resolve against; repeatable"},
		{name: "locked", help: "force lock mode; a deployment cannot turn it off (default: the deployment's own)"},
		{name: "user-config", arg: "FILE", help: "a user preference file (options only), applied below the deployment; refused under lock (default: none with --config; without it $XDG_CONFIG_HOME/pablo/config.toml, else ~/.config/pablo/config.toml, when present)"},
		{name: "workspace-config", arg: "FILE", help: "a workspace preference file (options only) you trust, applied above --user-config and below the deployment; refused under lock (default: none)"},
		{name: "loopback-http", help: "let http://127.0.0.1, http://[::1] and http://localhost stand in for remote endpoints (tests; never under lock)"},
	}
}

// roleFlag is --role: a role the task holds (TaskRequest.Roles). It
// grants nothing: a capability that requires a role is denied without it.
func roleFlag() flag {
	return flag{name: "role", arg: "ROLE", repeat: true, help: "a role the task holds (TaskRequest.Roles): a capability whose rule or configuration requires a role is denied without it, the decision naming the role; repeatable; never adds authority (default: none)"}
}

// kindFlag is --kind: the task's kind (TaskRequest.Kind), which decides
// the Skills it activates and reads.
func kindFlag() flag {
	return flag{name: "kind", arg: "KIND", help: "the task's kind (TaskRequest.Kind): only the Skills whose task-kinds list it, or list none, are activated and readable through skill.read (default: none, every activated Skill)"}
}

// jsonFlag is --json with the command's own meaning.
func jsonFlag(help string) flag { return flag{name: "json", help: help} }

func runFlags() []flag {
	return append(append([]flag{
		{name: "store", arg: "PATH|URL", help: "keep the task's ledger in this bbolt database, created if absent, or in the PostgreSQL database of a postgres:// URL without a password (PGPASSWORD, PGPASSFILE), schema created or migrated (default: $PABLO_STORE, else no store)"},
		{name: "script", arg: "FILE", help: "replace the configured model with a scripted replay (refused under lock)"},
		{name: "timeout", arg: "SECONDS", help: "the run deadline, 1..86400 (default: limits.max_run_duration_ms)"},
		{name: "tool-timeout", arg: "SECONDS", help: "each tool call's deadline, 1..86400, capped by the run's (default: limits.max_tool_duration_ms)"},
		{name: "max-model-calls", arg: "N", help: "model calls per task, 0..4294967295 (default: limits.max_model_calls)"},
		{name: "max-tool-calls", arg: "N", help: "tool calls per task, 0..4294967295 (default: limits.max_tool_calls)"},
		{name: "max-total-tokens", arg: "N", help: "input plus output tokens per task, a decimal integer (default: limits.max_total_tokens)"},
		{name: "max-cost-microusd", arg: "N", help: "cost per task in micro-USD, a decimal integer; needs a model with pricing (default: limits.max_cost_microusd)"},
		{name: "prompt-caching", arg: "MODE", help: "provider_default or auto; auto asks for prompt caching: Vercel's gateway caching, Anthropic cache breakpoints, OpenAI's and Gemini's implicit caching; any other provider refuses it (default: model.prompt_caching)"},
		{name: "approve", arg: "CAPABILITY", repeat: true, help: "answer allow once to every call of this capability that needs approval (docs/approvals.md), such as shell.run; repeatable; answers, never adds authority (default: ask on the terminal when stdin is one, showing the exact call; otherwise no one, so such a call is denied)"},
		{name: "no-shell", help: "remove shell.run (default: options.shell.enabled)"},
		{name: "no-filesystem", help: "remove every fs.* tool; conflicts with --allow-write (default: options.filesystem.enabled)"},
		{name: "allow-write", help: "add fs.write and fs.edit (default: options.filesystem.write)"},
		{name: "skill", arg: "ROOT/NAME", repeat: true, help: "activate this Skill, replacing skills.activate; repeatable, at most 8; needs --config, and under lock allowed_run_overrides listing skills.activate (default: skills.activate)"},
		roleFlag(),
		kindFlag(),
		{name: "fixture-endpoint", arg: "URL", help: "point the model at a loopback HTTP test server with a fixed key (refused under lock)"},
		{name: "trace", arg: "PATH", help: "write the native JSONL trace to a new file, mode 0600 (default: trace.path, or none)"},
		{name: "capture-content", help: "include model and tool content in the trace (default: trace.capture_content)"},
	}, extraRunFlags()...), []flag{
		{name: "traceparent", arg: "VALUE", help: "the caller's W3C traceparent, at most 512 bytes (default: a new trace)"},
		{name: "tracestate", arg: "VALUE", help: "the caller's W3C tracestate, at most 512 bytes; needs --traceparent"},
	}...)
}

// withoutFlag is flags less the one named: doctor takes run's flags to
// check what a run would use, but answers no approval (--approve).
func withoutFlag(flags []flag, name string) []flag {
	return slices.DeleteFunc(slices.Clone(flags), func(f flag) bool { return f.name == name })
}

// commands is the CLI, in the order help lists it.
func commands() []command {
	with := func(groups ...[]flag) []flag {
		var out []flag
		for _, g := range groups {
			out = append(out, g...)
		}
		return out
	}
	return []command{
		{path: "init", summary: "write a commented starter deployment for a provider (never overwrites a file)", flags: initFlags()},
		{path: "demo", schemas: []string{"task-object.schema.json"}, summary: "run the bundled offline demo (a scripted model, a fresh temporary workspace)",
			flags: []flag{
				jsonFlag("print one task object when the task settles"),
				{name: "store", arg: "PATH|URL", help: "keep the task's ledger in this bbolt database or the PostgreSQL database of a postgres:// URL without a password (default: $PABLO_STORE, else no store)"},
				{name: "trace", arg: "PATH", help: "write the native JSONL trace to a new file, mode 0600 (default: none)"},
				{name: "capture-content", help: "include model and tool content in the trace; needs --trace"},
			}},
		{path: "run", args: `"TASK"`, schemas: []string{"task-object.schema.json"}, summary: "run one task under the deployment's authority",
			deployment: true, flags: with([]flag{jsonFlag("print exactly one task object when the task settles, or the pre-admission envelope")}, runFlags()),
			notes: []string{
				"Text mode streams model text to stdout and tool progress to stderr.",
				"The --trace file holds one event per line, each as docs/schemas/trace-event.schema.json describes it.",
				"Exit: 0 completed, 1 the task ended otherwise, 2 invalid arguments or configuration, 130 cancelled.",
			}},
		{path: "tui", args: `["TASK"]`, summary: "an interactive terminal UI: Markdown answers, tool calls as they run, approvals asked in place (bare `pablo` on a terminal opens it)",
			deployment: true, flags: with(runFlags(), []flag{
				{name: "session", arg: "new|ID", help: "each submission continues one session, carrying its earlier prompts and answers: a new one, or the session ID of --store, whose turns are shown again first (a Go extension; default: each submission is a new task with fresh context)"},
			}),
			notes: []string{
				"Needs a terminal as stdin and stdout and a TERM that is set and not dumb; TASK, when given, is submitted at start.",
				"Keys: Enter submits; PgUp/PgDn or the wheel scroll the history; Ctrl-End returns to the live tail; o, t, r, x answer an approval; Ctrl-C cancels the active task (and waits for its cleanup), or exits when idle.",
				"Exit: 0 exited, 1 the UI failed, 2 invalid arguments or configuration, 130 interrupted (SIGINT, SIGTERM).",
			}},
		{path: "resume", args: "TASK_ID", schemas: []string{"task-object.schema.json"}, summary: "continue a task its host stopped, from its ledger, under the deployment's current authority",
			deployment: true, flags: with([]flag{jsonFlag("print exactly one task object when the task settles, or the pre-admission envelope")}, runFlags()),
			notes: []string{
				"Needs the store the task ran with (--store or $PABLO_STORE). Calls settled before the stop are not sent again; a call admitted and never sent is decided again and sent with its original idempotency key; a call sent and never settled is never sent again (options.resume.unknown); a model call in flight is sent again.",
				"The task keeps its original ceilings and charges; its duration counts from its first start.",
				"Exit: 0 completed, 1 the task ended otherwise, 2 invalid arguments, configuration, or a task that settled already (task_settled) or is not in the store, 3 the task's lease is live (another host runs it; PostgreSQL stores only), 130 cancelled.",
			}},
		{path: "acp", summary: "serve the deployment to an editor or host over the Agent Client Protocol (ACP v1) on stdin and stdout",
			deployment: true, flags: acpFlags(),
			notes: []string{
				"Stdout carries newline-delimited JSON-RPC and nothing else; diagnostics go to stderr.",
				"A session's cwd must be the bound workspace. The deployment is re-read at every prompt; the runtime is rebuilt only when it changed.",
				"Sessions whose prompts run at once: options.interfaces.acp.max_sessions (default 4).",
				"Exit: 0 the client closed stdin, 1 the connection failed, 2 invalid arguments or configuration, 130 interrupted (SIGINT, SIGTERM).",
			}},
		{path: "ledger show", args: "[TASK_ID]", schemas: []string{"ledger-report.schema.json", "error.schema.json"}, summary: "a ledger's tasks, their outcomes and counts",
			notes: []string{"Exit: 0 shown, 2 a missing store or invalid arguments, 3 a task's lease is live (another host runs it; PostgreSQL stores only)."},
			flags: []flag{
				{name: "store", arg: "PATH|URL", help: "the bbolt ledger database, or the postgres:// URL (no password) of the PostgreSQL one, to read (required, or $PABLO_STORE; never created or migrated)"},
				jsonFlag("print one JSON report"),
			}},
		{path: "ledger recover", args: "[TASK_ID]", schemas: []string{"ledger-recover.schema.json", "error.schema.json"}, summary: "after a crash: each task's completed, unknown and retryable calls, and its process groups still alive (exit 1 when any is unknown)",
			notes: []string{"Exit: 0 nothing unknown, 1 some outcome is unknown (never replay it; reconcile), 2 a missing store or invalid arguments, 3 a task's lease is live (another host runs it: recover once the lease has expired; PostgreSQL stores only)."},
			flags: []flag{
				{name: "store", arg: "PATH|URL", help: "the bbolt ledger database, or the postgres:// URL (no password) of the PostgreSQL one, to read (required, or $PABLO_STORE; never created or migrated)"},
				{name: "reap", help: "kill the recorded process groups that survived their host (same boot, pgid and leader start time only)"},
				jsonFlag("print one JSON report"),
			}},
		{path: "skills list", schemas: []string{"skills-list.schema.json", "error.schema.json"}, summary: "the Skills catalog of the configured roots (frontmatter only)",
			deployment: true, flags: with([]flag{jsonFlag("print the catalog as JSON")})},
		{path: "skills show", args: "ROOT/NAME", schemas: []string{"skills-show.schema.json", "error.schema.json"}, summary: "one Skill's record, its requirements and validation",
			deployment: true, flags: with([]flag{jsonFlag("print the record as JSON")})},
		{path: "config validate", schemas: []string{"config-validate.schema.json"}, summary: "offline: check the deployment and print its fingerprint",
			deployment: true, flags: with([]flag{jsonFlag("print one JSON document")})},
		{path: "config explain", schemas: []string{"config-explain.schema.json", "error.schema.json"}, summary: "offline: the resolved envelope with provenance, as JSON",
			deployment: true, flags: with([]flag{jsonFlag("accepted: the envelope is JSON already")})},
		{path: "config render", summary: "offline: a self-contained TOML document with the same fingerprint",
			deployment: true},
		{path: "policy check", args: "CAPABILITY_ID", schemas: []string{"policy-check.schema.json", "error.schema.json"}, summary: "offline: one decision, with the deciding layer and rule",
			deployment: true, flags: with([]flag{
				jsonFlag("print the decision as JSON"),
				{name: "read", arg: "PATH", repeat: true, help: "a workspace path the call would read; repeatable"},
				{name: "write", arg: "PATH", repeat: true, help: "a workspace path the call would write; repeatable"},
				{name: "shell", arg: "COMMAND", help: "decide a shell.run command line instead of a capability"},
				{name: "remote", arg: "NAME", help: "decide a subagent spawn_remote to the A2A remote NAME instead of a capability"},
			})},
		{path: "mcp probe", schemas: []string{"mcp-probe.schema.json", "error.schema.json"}, summary: "start each configured MCP server: health, version, tools admitted or denied, digests to pin",
			deployment: true, flags: with([]flag{jsonFlag("print one JSON report")})},
		{path: "a2a probe", schemas: []string{"a2a-probe.schema.json", "error.schema.json"}, summary: "fetch and admit each configured A2A remote's card: admitted, or exactly why not",
			deployment: true, flags: with([]flag{jsonFlag("print one JSON report")})},
		{path: "memory review", args: "PATCH", schemas: []string{"memory-review.schema.json", "error.schema.json"}, summary: "review a patch memory.update.propose wrote, at full scope: its changes, every conflict, and the patch for git am",
			deployment: true, flags: with([]flag{
				jsonFlag("print one JSON review"),
				{name: "kinds", arg: "KIND", repeat: true, help: "a record kind the proposer's grant allowed; repeatable (default, with --paths: options.memory.grants.propose_update)"},
				{name: "paths", arg: "PATH", repeat: true, help: "a repository path the proposer's grant allowed; repeatable (default, with --kinds: options.memory.grants.propose_update)"},
				{name: "out", arg: "FILE", help: "write the reviewed patch to a new file, mode 0600, for git am (default: not written)"},
			}),
			notes: []string{
				"PATCH is a file memory.update.propose wrote in a task's workspace. Nothing is written to the memory repository: applying the reviewed patch is yours to decide.",
				"Exit: 0 no conflict, 1 conflicts (listed), 2 invalid arguments, configuration or a patch that does not apply to the commit it names.",
			}},
		{path: "doctor", schemas: []string{"doctor-report.schema.json"}, summary: "readiness checks of a deployment (see the README for exit codes 3..8)",
			deployment: true, flags: with([]flag{
				jsonFlag("print the version-1 doctor report"),
				{name: "probe", arg: "provider|mcp|sandbox|a2a", help: "also send one short provider request, start the MCP servers, run the sandbox's live boundary canaries, or fetch the A2A remotes' cards (default: offline checks only)"},
			}, withoutFlag(runFlags(), "approve"))},
		{path: "graph", schemas: []string{"graph.schema.json", "error.schema.json"}, summary: "the capability requirement graph: every node's readiness and reasons, and the graph digest",
			deployment: true, flags: with([]flag{
				jsonFlag("print the graph as JSON"),
				{name: "probe", help: "start the MCP servers (no tool called) and fetch the A2A remotes' cards (no credential) to include their live health, tools and cards (default: offline)"},
				roleFlag(),
				kindFlag(),
			})},
		{path: "why", args: "CAPABILITY", schemas: []string{"why.schema.json", "error.schema.json"}, summary: "why a capability is admitted or not: the chain of nodes, layers, rules and missing grants (exit 0 admitted, 1 not)",
			deployment: true, flags: with([]flag{
				jsonFlag("print the explanation as JSON"),
				{name: "probe", help: "start the MCP servers (no tool called) and fetch the A2A remotes' cards (no credential) to include their live health and cards (default: offline)"},
				roleFlag(),
				kindFlag(),
			})},
		{path: "inspect", summary: "a read-only local web UI: each deployment's dependency cards, why, tools, MCP servers and Skills",
			flags: []flag{
				{name: "config", arg: "FILE", repeat: true, help: "a deployment file, one stack each (its name: the file's deployment.name, else its base name); repeatable, at least one"},
				{name: "config-root", arg: "DIR", help: "the directory every imported file must lie in (default: each config file's directory)"},
				{name: "profile", arg: "NAME", help: "the profile to apply to every stack (default: each file's own `profile`)"},
				{name: "bind", arg: "NAME=DIR", repeat: true, help: "a named host directory that path objects resolve against, for every stack; repeatable"},
				{name: "store", arg: "PATH|URL", help: "show the tasks of this bbolt ledger database or the PostgreSQL database of a postgres:// URL without a password, opened read-only (default: $PABLO_STORE, else no Tasks page)"},
				{name: "listen", arg: "HOST:PORT", help: "the address to serve on; one not on loopback prints a warning (default: 127.0.0.1:0, a free loopback port)"},
				{name: "allow-host", arg: "NAME", repeat: true, help: "a host name the pages may also be opened by, besides localhost, the --listen host and the listener's IP addresses (any, off loopback): a request addressed to another name is refused with 421 (DNS rebinding defence); repeatable"},
				{name: "loopback-http", help: "let http://127.0.0.1, http://[::1] and http://localhost stand in for remote endpoints, for every stack (tests; never under lock)"},
			},
			notes: []string{
				"Prints the URL it serves on, then serves until interrupted. Every page is read-only; pages hold no script and load nothing from elsewhere.",
				"Exit: 0 interrupted, 1 the server failed, 2 invalid arguments or configuration.",
			}},
		{path: "version", summary: "print the executable version"},
	}
}

// lookup returns the command named by path.
func lookup(path string) (command, bool) {
	for _, c := range commands() {
		if c.path == path {
			return c, true
		}
	}
	return command{}, false
}

// allFlags are the deployment flags, when the command takes them, and its
// own.
func (c command) allFlags() []flag {
	if !c.deployment {
		return c.flags
	}
	return append(deploymentFlags(), c.flags...)
}

// specs is the parser's view of a command's flags.
func (c command) specs() map[string]flagSpec {
	out := map[string]flagSpec{}
	for _, f := range c.allFlags() {
		out[f.name] = flagSpec{value: f.arg != "", repeat: f.repeat}
	}
	return out
}

// synopsis is the command's usage line.
func (c command) synopsis() string {
	s := "pablo " + c.path
	if c.args != "" {
		s += " " + c.args
	}
	if len(c.allFlags()) > 0 {
		s += " [flags]"
	}
	return s
}

// writeHelp prints a command's help: its synopsis, summary and one line per
// flag, with its range and default.
func (c command) writeHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", c.synopsis(), capitalize(c.summary))
	for _, n := range c.notes {
		fmt.Fprintf(w, "%s\n", n)
	}
	if len(c.schemas) > 0 {
		fmt.Fprintf(w, "JSON shape (Draft 2020-12 schema): docs/schemas/%s", c.schemas[0])
		if len(c.schemas) > 1 {
			fmt.Fprintf(w, "; on failure docs/schemas/%s", c.schemas[1])
		}
		fmt.Fprintln(w)
	}
	labels := []string{"-h, --help"}
	helps := []string{"show this help"}
	for _, f := range c.allFlags() {
		labels = append(labels, f.label())
		helps = append(helps, f.help)
	}
	width := 0
	for _, l := range labels {
		width = max(width, len(l))
	}
	fmt.Fprintln(w, "\nflags:")
	for i := 1; i <= len(labels); i++ {
		j := i % len(labels) // every flag, then -h, --help
		fmt.Fprintf(w, "  %-*s  %s\n", width, labels[j], helps[j])
	}
}

// label is how help shows a flag: --bind NAME=DIR.
func (f flag) label() string {
	if f.arg == "" {
		return "--" + f.name
	}
	return "--" + f.name + " " + f.arg
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeUsage prints the command list: the top-level help.
func writeUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: pablo COMMAND [ARGS] [flags]")
	fmt.Fprintln(w, "\ncommands:")
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.path+" "+c.args))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, strings.TrimSpace(c.path+" "+c.args), c.summary)
	}
	fmt.Fprintln(w, "\nRun 'pablo COMMAND --help' for a command's flags.")
}

// writeGroupUsage prints the commands of a group ("config", "ledger").
func writeGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "usage: pablo %s SUBCOMMAND [ARGS] [flags]\n\nsubcommands:\n", group)
	for _, c := range commands() {
		if sub, ok := strings.CutPrefix(c.path, group+" "); ok {
			fmt.Fprintf(w, "  %-10s %s\n", sub, c.summary)
		}
	}
	fmt.Fprintf(w, "\nRun 'pablo %s SUBCOMMAND --help' for its flags.\n", group)
}

// helpRequest is --help or -h on a command line: help on stdout, exit 0.
type helpRequest struct{ path string }

func (h *helpRequest) Error() string { return "help requested for " + h.path }

// isGroup reports whether word names a group of subcommands.
func isGroup(word string) bool {
	for _, c := range commands() {
		if strings.HasPrefix(c.path, word+" ") {
			return true
		}
	}
	return false
}
