//go:build !amd64

package ledger

// haveCPUTicks: no timestamp counter is read on this architecture; every
// record reads the system clock (see Clock).
const haveCPUTicks = false

func cpuTicks() uint64 { return 0 }
