//go:build race

package authority

// raceEnabled: the race detector allocates for its own bookkeeping, so
// tests that count allocations do not run under it.
const raceEnabled = true
