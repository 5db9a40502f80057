//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// GateProgram is the shell that holds a command started under a [Recorder]
// until its group is recorded.
const GateProgram = "/bin/sh"

// gateReserved prefixes the variables the gate shell uses for itself; a
// command's environment must not hold any.
const gateReserved = "__pablo_gate_"

// gateRelease is what Start writes to a gate once the group is recorded:
// one line, so the shell's read succeeds (a read that meets end of file
// fails, and the gate exits without running the command).
const gateRelease = "\n"

// gateExit is the gate shell's exit status when its pipe reached end of
// file before the release: the owner died or refused the group.
const gateExit = 125

// gateShellVariables are the variables /bin/sh sets or resets at startup
// whatever its environment says. The gate passes each one on as the
// command's environment had it; of those it was not given, only PWD needs
// removing (dash exports it even then; unsetting OPTIND is an error).
func gateShellVariables() [4]string { return [4]string{"PWD", "IFS", "OPTIND", "PPID"} }

// gateCommand rewrites cmd so that /bin/sh starts first and executes cmd's
// program only once a line arrives on the returned pipe, which it holds
// open as a descriptor past cmd.ExtraFiles. The leader is the same process
// before and after the exec, so its pgid and start time are those the
// recorder saw. The program gets cmd's environment exactly, and argv[0]
// is cmd.Path (a shell cannot set another). r is the child's end, w ours.
func gateCommand(cmd *exec.Cmd) (r, w *os.File, err error) {
	env := cmd.Environ()
	specials := gateShellVariables()
	var given [len(specials)]bool
	gateEnv := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !shellName(name):
			return nil, nil, fmt.Errorf("%w: environment entry %q is not NAME=value with a shell variable name; a process started under a Recorder waits in %s for its group to be recorded, and the shell would drop it", ErrInvalidOptions, shortEntry(kv), GateProgram)
		case strings.HasPrefix(name, gateReserved):
			return nil, nil, fmt.Errorf("%w: environment variable %s uses the prefix %s, reserved for the start gate", ErrInvalidOptions, name, gateReserved)
		}
		for i, s := range specials {
			if name == s {
				given[i], kv = true, gateReserved+kv
			}
		}
		gateEnv = append(gateEnv, kv)
	}
	fd := strconv.Itoa(3 + len(cmd.ExtraFiles))
	var s strings.Builder
	s.WriteString("read -r " + gateReserved + "line <&" + fd + " || exit " + strconv.Itoa(gateExit) + "; unset " + gateReserved + "line; ")
	for i, name := range specials {
		if given[i] {
			// An assignment neither splits nor expands its value.
			s.WriteString(name + "=$" + gateReserved + name + "; export " + name + "; unset " + gateReserved + name + "; ")
		} else if name == "PWD" {
			s.WriteString("unset PWD; ")
		}
	}
	s.WriteString(`exec "$0" "$@" ` + fd + "<&-")
	path := cmd.Path
	if !strings.Contains(path, "/") {
		path = "./" + path // the shell would search PATH for a bare name
	}
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	args := make([]string, 0, 3+len(cmd.Args))
	args = append(args, GateProgram, "-c", s.String(), path)
	if len(cmd.Args) > 1 {
		args = append(args, cmd.Args[1:]...)
	}
	cmd.Path, cmd.Args, cmd.Env = GateProgram, args, gateEnv
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	return r, w, nil
}

// shellName reports whether name is a shell variable name.
func shellName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return name != ""
}

// shortEntry is an environment entry for an error message: its name only,
// since the value may be a secret.
func shortEntry(kv string) string {
	name, _, _ := strings.Cut(kv, "=")
	if len(name) > 64 {
		name = name[:64]
	}
	return strings.ToValidUTF8(name, "?") + "=…"
}
