package ledger

// cpuTicks reads the CPU's timestamp counter (RDTSC).
func cpuTicks() uint64

// cpuTicksOrdered reads it after every earlier instruction has completed
// (LFENCE; RDTSC).
func cpuTicksOrdered() uint64

// haveInvariantTicks reports whether the counter runs at a constant rate
// in every power state (CPUID 0x80000007, EDX bit 8), as Linux requires of
// a TSC it keeps time with.
func haveInvariantTicks() bool
