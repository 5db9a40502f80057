package ledger

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// releaseMapped tells the kernel that this process no longer needs the
// pages of the store's memory map it has touched (madvise MADV_DONTNEED
// over the first size bytes). bbolt maps the file read-only and shared and
// writes through the file, and never rewrites a page a reader may still
// see, so a page read again is read back unchanged from the page cache:
// only this process's resident set shrinks. A walk over every task calls
// it between pages of task IDs (32 tasks: the kernel maps up to 64 KiB
// around each page fault, so a larger window costs megabytes), so its
// peak RSS stays flat in the store's size rather than growing to the
// file's.
func releaseMapped(db *bolt.DB, size int64) {
	if size <= 0 {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
}
