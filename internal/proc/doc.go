// Package proc starts and owns operating-system processes for Pablo.
//
// Every process started through [Start] becomes the leader of a new session
// and of its own process group, with no controlling terminal and stdin
// /dev/null or a pipe: it cannot reach the terminal the host runs in (open
// /dev/tty, or push input into it with TIOCSTI). A command that makes its
// own session for what it runs (bubblewrap, [Options.SessionByCommand])
// leads a new process group only. Whatever way the process ends — it exits, the caller's context is
// cancelled or times out, the caller calls [Process.Kill], or captured output
// overflows its bound — the owner tears down the whole group the same way:
//
//  1. SIGKILL is sent to the group (kill(-pgid, SIGKILL));
//  2. the leader is reaped;
//  3. the output pipes are drained to end of file; a pipe still held open
//     when the cleanup allowance runs out has its read end closed by us, so a
//     stray holder can never hang the owner;
//  4. the group is probed (kill(-pgid, 0)) until it reports ESRCH.
//
// All of this happens inside a bounded cleanup allowance (2 s by default). When
// cleanup cannot be proven inside it, [Process.Wait] returns a *[CleanupError]
// (errors.Is(err, [ErrCleanup])) next to the result: an unprovable cleanup is
// never silent.
//
// Two deliberate limits of what a process group can own:
//
//   - A process that leaves its group on purpose (setsid, or setpgid to another
//     group) is outside anything a process group can own. Pablo cannot find or
//     kill it. If it still holds one of our pipes when the allowance runs out,
//     the owner notices and reports ErrCleanup; if it redirected its output
//     elsewhere, nothing distinguishes it from an unrelated process. Hosts that
//     need that guarantee run Pablo inside a container or cgroup.
//   - A killed member that was re-parented to an init process which does not
//     reap orphans stays a zombie with our group ID. A zombie runs no code and
//     holds no file descriptors, so on Linux the probe counts a group whose only
//     remaining members are zombies (state Z or X in /proc/PID/stat) as gone.
//     Reaping them is the job of their new parent.
//
// A plain double fork such as `( sleep 60 & ) &` does not leave the group, so it
// is killed like any other member.
//
// The owner may die before it can tear a group down (SIGKILL, a crash). On
// Linux the leader then gets SIGKILL as its parent-death signal; the other
// members live on in the group. A context carrying a [Recorder]
// ([WithRecorder]) has every group's identity ([Group]: boot ID, pgid, the
// leader's start time) handed over before the process runs its command, so
// a later process can find the survivors ([Survivors]) and kill them
// ([Reap]), and never a group that merely reuses the pgid. A command's work
// may be in its arguments (`/bin/sh -c 'touch f && sleep 60'`) or in what
// it does at exec (a server that forks a daemon): the gate shell
// ([GateProgram]) holds it, and executes it in the same process only once
// the recorder returned.
//
// Output is either captured with a bound (one-shot commands: [Options.MaxStdout],
// [Options.MaxStderr], [Options.MaxTotal], with optional streaming of the
// captured bytes through [Options.OnOutput]) or handed to the caller as a pipe
// for protocol use ([Options.PipeStdin], [Options.PipeStdout]), as the MCP stdio
// transport needs.
//
// Process groups exist only on Unix; elsewhere [Start] returns
// [ErrUnsupportedPlatform].
package proc
