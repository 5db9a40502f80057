package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// platformSupported says whether bubblewrap exists on this platform.
const platformSupported = true

// filterPipe is a pipe that holds the compiled filter and is already
// closed for writing, so bubblewrap reads the program and then end of
// file. The filter is a few hundred bytes, far below a pipe's buffer: the
// write never blocks. The read end is blocking (no poller): only the
// child reads it.
func filterPipe(filter []byte) (*os.File, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	n, err := unix.Write(fds[1], filter)
	unix.Close(fds[1])
	if err == nil && n != len(filter) {
		err = fmt.Errorf("short write of %d of %d bytes", n, len(filter))
	}
	if err != nil {
		unix.Close(fds[0])
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-filter"), nil
}
