//go:build unix

package skills

import (
	"os"
	"path/filepath"
	"syscall"
)

// makeFIFO creates dir/name as a FIFO and reports whether it could.
func makeFIFO(dir, name string) bool {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false
	}
	return syscall.Mkfifo(filepath.Join(dir, name), 0o644) == nil
}
