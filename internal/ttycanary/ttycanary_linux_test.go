package ttycanary_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/ttycanary"
)

// TestProgramTypesIntoItsControllingTerminal is the control of every
// terminal test: run with the terminal as its controlling terminal and
// nothing in the way, Program types the marker into the terminal's input
// queue and Typed sees it, so a test that finds the terminal untouched
// proves the way blocked. Where the kernel refuses TIOCSTI to everyone
// (dev.tty.legacy_tiocsti = 0 and no CAP_SYS_ADMIN) the control cannot
// type, and says so.
func TestProgramTypesIntoItsControllingTerminal(t *testing.T) {
	tty, err := ttycanary.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	rep, typed, err := tty.Run(exec.Command("/bin/sh", "-c", ttycanary.Program))
	if err != nil {
		t.Fatal(err)
	}
	if rep["fd0"] == "EIO" {
		t.Skipf("this kernel refuses TIOCSTI to everyone (%s; dev.tty.legacy_tiocsti = %s): the control cannot type", rep, legacyTIOCSTI())
	}
	n, _ := tty.Queued()
	if !rep.Typed() || !typed || n < len(ttycanary.Marker) {
		t.Fatalf("the control did not type into its terminal: report %s, typed %v, %d bytes queued", rep, typed, n)
	}
	// Not a terminal: the kernel's answer (a seccomp filter's would be EPERM).
	if rep["fd2"] != "ENOTTY" || rep["null"] != "ENOTTY" || rep["linux"] != "ENOTTY" || rep["high"] != "ENOTTY" {
		t.Fatalf("report %s: want ENOTTY for stderr and /dev/null", rep)
	}
	t.Logf("control: %s; dev.tty.legacy_tiocsti = %s", rep, legacyTIOCSTI())
}

func legacyTIOCSTI() string {
	b, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	if err != nil {
		return "absent (kernel before 6.2: TIOCSTI allowed)"
	}
	return strings.TrimSpace(string(b))
}

func TestParseReportNamesErrnos(t *testing.T) {
	rep, ok := ttycanary.ParseReport([]byte("noise\nttycanary: fd0=1 fd1=0 fd2=closed tty=open:6 null=25\n"))
	if !ok || rep.String() != "fd0=EPERM fd1=0 fd2=closed tty=open:ENXIO null=ENOTTY" || !rep.Typed() {
		t.Fatalf("%v %q", ok, rep)
	}
	if _, ok := ttycanary.ParseReport([]byte("ttycanary: perl=missing\n")); ok {
		t.Fatal("a report without perl is no report")
	}
}
