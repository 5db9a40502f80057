//go:build race

package ids

// raceEnabled: the race detector allocates for its own bookkeeping, so
// tests that count allocations do not count under it.
const raceEnabled = true
