//go:build !unix

package skills

// makeFIFO is unavailable off Unix.
func makeFIFO(dir, name string) bool { return false }
