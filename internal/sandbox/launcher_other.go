//go:build !linux

package sandbox

import "os"

// platformSupported says whether bubblewrap exists on this platform.
const platformSupported = false

// etcView makes no view where there is no sandbox.
func etcView(string) string { return "" }

// filterPipe is never reached where there is no sandbox.
func filterPipe([]byte) (*os.File, error) { return nil, os.ErrInvalid }

// openBeneath is never reached where there is no sandbox.
func openBeneath(string, string) ([]*os.File, error) { return nil, os.ErrInvalid }

// openFileBeneath is never reached where there is no sandbox.
func openFileBeneath(string, string) ([]*os.File, error) { return nil, os.ErrInvalid }
