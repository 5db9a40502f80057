package memory

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/pabloagent/pablo/internal/fsx"
)

// A proposed patch as a file of the workspace: where propose writes it,
// and what validate and review read back.

// WriteProposal writes a proposed patch as name under the workspace ws's
// directory dir, through os.Root so nothing escapes it, and returns its
// path relative to ws.
func WriteProposal(ws, dir, name string, data []byte) (string, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	rel := path.Join(dir, name)
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	return rel, f.Close()
}

// ReadProposal reads the workspace file rel for validation through
// os.Root, so nothing outside the workspace ws is read, bounded by
// MaxPatchBytes.
func ReadProposal(ws, rel string) ([]byte, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// Non-blocking, so a FIFO in the workspace is refused, not waited on.
	f, err := root.OpenFile(rel, os.O_RDONLY|fsx.OpenFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPatchBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxPatchBytes {
		return nil, fmt.Errorf("%s is over %d bytes", rel, MaxPatchBytes)
	}
	return b, nil
}

// PatchBase reads the commit a proposed patch names.
func PatchBase(patch []byte) (string, bool) {
	const lead = "Proposed against memory commit "
	for _, l := range strings.SplitN(string(patch), "\n", 64) {
		if c, ok := strings.CutPrefix(l, lead); ok {
			c = strings.TrimSuffix(c, ".")
			if len(c) == 40 && strings.Trim(c, "0123456789abcdef") == "" {
				return c, true
			}
		}
	}
	return "", false
}
