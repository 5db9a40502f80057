//go:build !race

package pablo

const raceEnabled = false
