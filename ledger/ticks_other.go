//go:build !amd64

package ledger

// No timestamp counter is read on this architecture: every record reads
// the system clock (see Clock).

func cpuTicks() uint64         { return 0 }
func cpuTicksOrdered() uint64  { return 0 }
func haveInvariantTicks() bool { return false }
