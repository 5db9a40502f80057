//go:build !linux

package sandbox

// platformSupported says whether bubblewrap exists on this platform.
const platformSupported = false
