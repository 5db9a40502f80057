// Package ttycanary tells whether a process can type into a terminal. It
// opens a pseudo-terminal pair the caller owns ([Open]), attaches its
// terminal to a command as a user's shell attaches one to a job (stdin,
// stdout and controlling terminal: [Terminal.Attach]), and reports whether
// anything was pushed into the terminal's input queue ([Terminal.Typed]).
// [Program] is the injection: it tries TIOCSTI on its standard descriptors
// and on /dev/tty, the attack by which a command left with the host's
// terminal types a command line the user's shell runs once the host exits,
// and writes what each try returned ([ParseReport]).
//
// `pablo doctor --probe sandbox` runs Program inside the sandbox against a
// terminal of its own, and the tests of internal/proc, internal/shell, mcp
// and the reference CLI run it from a shell.run command and a stdio MCP
// server, sandboxed and not.
package ttycanary

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Marker is the line Program types, newline included: were it to land in a
// user's terminal, the shell would run a command that does not exist.
const Marker = "pablo-tty-canary\n"

// ReportPrefix starts the one line Program writes to its stderr.
const ReportPrefix = "ttycanary:"

// Program is the injection, a /bin/sh script (run it with /bin/sh -c and no
// argument). With perl (Debian's Essential perl-base) it tries, byte by
// byte, to push [Marker] into the input queue of each of its descriptors 0,
// 1 and 2 and of /dev/tty with TIOCSTI, then asks /dev/null for TIOCSTI,
// for TIOCLINUX, and for TIOCSTI with bits set above the low 32 (which the
// kernel ignores): on a descriptor that is not a terminal the kernel says
// ENOTTY, so only a seccomp filter answers those with EPERM. It writes one
// line to stderr, ReportPrefix then name=result pairs (see
// [ParseReport]); without perl it writes ReportPrefix and "perl=missing"
// and exits 127.
const Program = `if ! command -v perl >/dev/null 2>&1; then echo "` + ReportPrefix + ` perl=missing" >&2; exit 127; fi
exec perl -e '
my @r;
sub type_into { my ($f) = @_; for my $c (split //, "` + perlMarker + `") { return $! + 0 unless ioctl($f, 0x5412, $c); } return 0; }
for my $fd (0, 1, 2) {
  my $f;
  if (open($f, "+<&=", $fd) || open($f, "<&=", $fd) || open($f, ">&=", $fd)) { push @r, "fd$fd=" . type_into($f); }
  else { push @r, "fd$fd=closed"; }
}
if (open(my $t, "+<", "/dev/tty")) { push @r, "tty=" . type_into($t); } else { push @r, "tty=open:" . ($! + 0); }
if (open(my $n, "<", "/dev/null")) {
  my $c = "x";
  push @r, "null=" . (ioctl($n, 0x5412, $c) ? 0 : $! + 0);
  push @r, "linux=" . (ioctl($n, 0x541C, $c) ? 0 : $! + 0);
  push @r, "high=" . (ioctl($n, 0x100005412, $c) ? 0 : $! + 0);
}
print STDERR "` + ReportPrefix + ` ", join(" ", @r), "\n";
'`

// perlMarker is Marker as a perl double-quoted string.
const perlMarker = `pablo-tty-canary\n`

// Report is what one run of Program tried, by name: "fd0", "fd1", "fd2",
// "tty" (TIOCSTI into each), "null", "linux", "high" (the requests asked of
// /dev/null). A value is "0" when the request succeeded, an errno name
// ("EPERM") when it failed, "closed" for a descriptor that was not open and
// "open:ENXIO" for a /dev/tty that could not be opened.
type Report map[string]string

// ParseReport finds Program's line in its stderr; ok is false when there
// is none (the program did not run) or it says perl is missing.
func ParseReport(stderr []byte) (r Report, ok bool) {
	for line := range strings.Lines(string(stderr)) {
		rest, found := strings.CutPrefix(strings.TrimSpace(line), ReportPrefix)
		if !found {
			continue
		}
		r = Report{}
		for _, f := range strings.Fields(rest) {
			name, val, _ := strings.Cut(f, "=")
			r[name] = errnoNames(val)
		}
		return r, r["perl"] != "missing"
	}
	return nil, false
}

// errnoNames turns the errno numbers in v ("1", "open:6") into names.
func errnoNames(v string) string {
	prefix, num := "", v
	if p, n, ok := strings.Cut(v, ":"); ok {
		prefix, num = p+":", n
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 {
		return v
	}
	return prefix + errnoName(syscall.Errno(n))
}

// Typed reports whether any try of r put the marker in: a TIOCSTI that
// succeeded.
func (r Report) Typed() bool {
	for _, k := range []string{"fd0", "fd1", "fd2", "tty"} {
		if r[k] == "0" {
			return true
		}
	}
	return false
}

// String lists r's entries in Program's order.
func (r Report) String() string {
	var parts []string
	for _, k := range []string{"fd0", "fd1", "fd2", "tty", "null", "linux", "high", "perl"} {
		if v, ok := r[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// Run runs cmd on t as a user's shell runs a job (Attach), its stderr
// captured, and returns the report the canary program wrote there and
// whether the terminal was typed into (Typed). It fails, with what cmd
// wrote, when cmd fails or writes no report.
func (t *Terminal) Run(cmd *exec.Cmd) (rep Report, typed bool, err error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t.Attach(cmd)
	if err := cmd.Run(); err != nil {
		return nil, false, fmt.Errorf("%v: %s", err, stderr.Bytes())
	}
	rep, ok := ParseReport(stderr.Bytes())
	if !ok {
		return nil, false, fmt.Errorf("no report: %q", stderr.String())
	}
	typed, err = t.Typed()
	return rep, typed, err
}
