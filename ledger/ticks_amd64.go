package ledger

// haveCPUTicks: amd64 has a timestamp counter (see Clock).
const haveCPUTicks = true

// cpuTicks reads the CPU's timestamp counter (RDTSC).
func cpuTicks() uint64
