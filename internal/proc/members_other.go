//go:build !linux

package proc

import (
	"os"
	"time"
)

// GroupMembers lists the processes of a process group. It needs /proc, so
// outside Linux it returns ErrUnsupportedPlatform.
func GroupMembers(pgid int) ([]Member, error) {
	return nil, ErrUnsupportedPlatform
}

// onlyZombies cannot be decided without /proc; the probe then relies on
// kill(-pgid, 0) alone.
func onlyZombies(int) bool { return false }

// initAlive cannot be decided without /proc: it says alive (no sandbox
// runs outside Linux, so no caller names an init there).
func initAlive(int, int) bool { return true }

// awaitInit needs a pidfd: outside Linux the probe polls.
func awaitInit(int, int, time.Time) (gone, ok bool) { return false, false }

// exited cannot be decided without /proc: the owner waits for its own
// reaper alone.
func exited(int) bool { return false }

// writersGone is not decided outside Linux: the owner waits for its
// readers alone.
func writersGone([]*os.File) bool { return false }
