//go:build !linux

package sandbox

// platformSupported says whether bubblewrap exists on this platform.
const platformSupported = false

// etcView makes no view where there is no sandbox.
func etcView(string) string { return "" }
