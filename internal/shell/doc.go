// Package shell implements Pablo's native shell.run tool: the literal command
// grammar, executable resolution, layered command rules and the governed
// executor that runs a command in an owned process group.
//
// # Two modes
//
// With no command policy configured at any layer, shell.run runs
// `/bin/sh -c COMMAND` as the reference does. Once a [Policy] exists — even
// one whose layers are deny-only or have no rules at all — every command must
// pass the literal grammar ([Parse]), resolve to an executable ([Resolve]) and
// be allowed by every layer; it is then dispatched as
// `/bin/sh -c 'exec "$@"' sh ARGV...`, so the shell never interprets the
// words a second time. [Options.DirectExec] opts into executing the resolved
// program directly, which saves the shell's exec (see its documentation for
// what else changes).
//
// The shell sets PWD itself, so a command run through it sees PWD in addition
// to PATH=/usr/bin:/bin, LANG=C and the admitted PABLO_TASK_* variables.
//
// # Built-in decision IDs
//
// Denials that no configured rule made are named by these rule IDs:
//
//	builtin.shell.syntax              the command failed the literal grammar
//	builtin.shell.executable          the program could not be resolved
//	builtin.commands.allowlist_miss   a layer has allow rules and none matched
//	builtin.commands.default_deny     a layer without allow rules denies by default
//	builtin.commands.default_allow    (allowed) a layer without rules allows by default
//	builtin.workspace                 cwd is outside the workspace
//	builtin.symlink                   cwd escapes the workspace through a symlink
//	builtin.environment               env names or values are not admitted
//	builtin.unsupported_platform      shell execution is Linux and macOS only
//	builtin.sandbox.unavailable       a required sandbox cannot be made here
//
// A denial carries a reason code and never echoes the command text.
//
// The literal policy is not a sandbox: it decides what may run. Every
// command also runs in a bubblewrap sandbox (internal/sandbox,
// [Options.Sandbox]) that bounds what it can touch: by default the
// workspace read-only, no network, a fresh /proc, private /tmp and HOME,
// an unprivileged user, and nothing started inside outlives the call.
// Where no sandbox can be made the runner fails closed; running
// unconfined is the host's explicit choice (mode off).
//
// "The reference" here is Pablo's original implementation, in Rust:
// https://github.com/calebjohn24/pablo. Where this package differs from it
// on purpose, docs/differences.md says so.
package shell
