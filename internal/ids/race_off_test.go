//go:build !race

package ids

// raceEnabled: see race_on_test.go.
const raceEnabled = false
