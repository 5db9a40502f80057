package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/textx"
)

// Sentinel error kinds, for errors.Is.
var (
	// ErrUnavailable: no sandbox can be made on this host (bubblewrap is
	// missing, cannot create namespaces, or the platform is not Linux). A
	// required sandbox fails closed.
	ErrUnavailable = errors.New("sandbox: unavailable")
	// ErrSetup: bubblewrap could not set up the sandbox of one call.
	ErrSetup = errors.New("sandbox: could not be set up")
)

// UnavailableReason is a stable code for why no sandbox can be made.
type UnavailableReason string

// The reasons a sandbox is unavailable.
const (
	NotInstalled        UnavailableReason = "not_installed"
	NoNamespaces        UnavailableReason = "no_namespaces"
	UnsupportedPlatform UnavailableReason = "unsupported_platform"
)

// UnavailableError reports a host on which no sandbox can be made, and
// what to do about it.
type UnavailableError struct {
	Reason UnavailableReason
	// Path is the bubblewrap launcher looked for.
	Path string
	// Detail is what failed: bubblewrap's own message, or the lookup's.
	Detail string
}

// Error implements error.
func (e *UnavailableError) Error() string {
	optOut := `or opt out with sandbox mode = "off" (options.shell.sandbox, options.mcp.servers.NAME.sandbox)`
	switch e.Reason {
	case NotInstalled:
		return fmt.Sprintf("sandbox: bubblewrap is not installed at %s (%s): install the Debian package bubblewrap (apt-get install bubblewrap), %s", e.Path, e.Detail, optOut)
	case NoNamespaces:
		return fmt.Sprintf("sandbox: bubblewrap at %s cannot create namespaces on this host (%s): allow unprivileged user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or an AppArmor profile for bwrap), %s", e.Path, e.Detail, optOut)
	}
	return fmt.Sprintf("sandbox: the bubblewrap sandbox is Linux only (%s): %s", e.Detail, optOut)
}

// Unwrap makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// SetupError reports a sandbox bubblewrap could not set up for one call:
// the command never ran.
type SetupError struct {
	// Detail is bubblewrap's own message ("bwrap: ..."), bounded, or a
	// description when it wrote none.
	Detail string
}

// Error implements error.
func (e *SetupError) Error() string {
	return "sandbox: the sandbox could not be set up, the command did not run: " + e.Detail
}

// Unwrap makes errors.Is(err, ErrSetup) hold.
func (e *SetupError) Unwrap() error { return ErrSetup }

// maxDetailBytes bounds the bubblewrap message an error carries.
const maxDetailBytes = 240

// bwrapMessage picks bubblewrap's own message out of the stderr of a run:
// the last line it wrote ("bwrap: ..."), bounded and printable.
func bwrapMessage(stderr []byte) string {
	var last string
	for line := range strings.SplitSeq(string(stderr), "\n") {
		if strings.HasPrefix(line, "bwrap: ") {
			last = line
		}
	}
	if last == "" {
		return "bubblewrap ended before the command started and wrote no message"
	}
	last = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(last, "?"))
	return textx.Shorten(last, maxDetailBytes)
}
