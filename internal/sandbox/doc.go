// Package sandbox confines a command in a bubblewrap sandbox on Linux: new
// user, mount, PID, IPC, UTS and (unless the profile allows the network)
// network namespaces, a fresh /proc, a private /tmp and HOME, the system
// directories read-only, of /etc only the files a program needs to run, and
// of the host's files only what the [Profile] grants. The command runs as an
// unprivileged user (uid and gid 65534) inside its user namespace, even when
// the host is root.
//
// A [Launcher] is bubblewrap resolved once at its absolute path
// (/usr/bin/bwrap, the Debian package bubblewrap). [Launcher.Command] turns a
// profile and a [Spec] (what to run, where) into the exec.Cmd that runs it
// confined; the caller starts that command as an owned process group
// (internal/proc), so cancellation, timeouts and cleanup keep their
// guarantees. bubblewrap is started with the command's own cleared
// environment (its init process is PID 1 of the sandbox, and its
// environment would be readable at /proc/1/environ), it dies with its
// parent, and when the first process ends the kernel kills every process
// left in the PID namespace: a setsid or double-forked grandchild included.
//
// The command never holds the host's terminal. It runs in a session of its
// own (bubblewrap's --new-session), so it has no controlling terminal:
// /dev/tty does not open, and the kernel refuses TIOCSTI (pushing
// keystrokes into a terminal's input queue, which the user's shell would
// run once the host exits) on any terminal it might be handed. A seccomp
// filter (bubblewrap's --seccomp, built once per [Launcher] and handed to
// each call through a pipe) refuses ioctl TIOCSTI and TIOCLINUX with EPERM
// on every descriptor as well, under every system call ABI of amd64 and
// arm64; on other architectures the new session alone holds the line.
//
// There is never a silent fallback. Where bubblewrap is missing, cannot
// create namespaces, or the platform is not Linux, [Launcher.Ready] and
// [Launcher.Command] fail with an *[UnavailableError]
// (errors.Is(err, [ErrUnavailable])) that says how to install bubblewrap or
// opt out; a sandbox that cannot be set up for one call fails it with a
// *[SetupError] ([ErrSetup]). A profile whose mode is [Off] is the host's
// explicit choice to run unconfined, and is recorded as such by the callers.
//
// [Probe] runs live canaries through the sandbox (a write outside the
// workspace, a read of the host's environment, a connection to a loopback
// listener, keystrokes pushed into a terminal of the probe's own) and
// reports each one blocked or not: `pablo doctor --probe sandbox` and the
// test suite run it.
package sandbox
