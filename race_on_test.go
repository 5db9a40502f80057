//go:build race

package pablo

// raceEnabled: the race detector allocates for its own bookkeeping, so
// tests that count allocations do not run under it.
const raceEnabled = true
