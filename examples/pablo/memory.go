package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/pabloagent/pablo/deployment"
)

// memoryCommand implements `pablo memory review PATCH`: a patch
// memory.update.propose wrote, read by a reviewer with full scope
// (pablo.Deployment.ReviewMemoryProposal). The proposer is never told of a
// conflict with a record its grant hides; this is where a person learns
// of it, and gets the patch carried onto the pinned files for git am.
// Exit 0 when there is no conflict, 1 when there are.
func memoryCommand(ctx context.Context, args []string, h *host) error {
	if len(args) == 0 || args[0] != "review" {
		return usagef("usage: pablo memory review PATCH --config F [--bind NAME=DIR]... [--kinds KIND]... [--paths PATH]... [--out FILE] [--json]")
	}
	p, err := parseArgs(args[1:], "memory review")
	if err != nil {
		return err
	}
	if len(p.args) != 1 {
		return usagef("memory review takes one PATCH file")
	}
	if (len(p.values["kinds"]) == 0) != (len(p.values["paths"]) == 0) {
		return usagef("memory review: give --kinds and --paths together, or neither")
	}
	patch, err := readPatchFile(anchorTo(p.args[0], h.workDir))
	if err != nil {
		return usagef("memory review: %v", err)
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	rv, err := d.ReviewMemoryProposal(ctx, patch, deployment.MemoryReviewOptions{Kinds: p.values["kinds"], Paths: p.values["paths"]})
	if err != nil {
		return usagef("%v", err)
	}
	out := p.one("out")
	if out != "" {
		out = anchorTo(out, h.workDir)
	}
	if out != "" && rv.Patch != "" {
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return usagef("memory review --out: %v", err)
		}
		_, err = f.WriteString(rv.Patch)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("memory review --out: %w", err)
		}
	}
	if p.bools["json"] {
		writeJSON(h, rv)
	} else {
		printMemoryReview(h, rv, out)
	}
	if len(rv.Conflicts) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("memory review: %d conflict(s)", len(rv.Conflicts))}
	}
	return nil
}

// maxMemoryPatchBytes bounds the patch file read, as the tools bound it.
const maxMemoryPatchBytes = 4 << 20

// readPatchFile reads a regular file of at most maxMemoryPatchBytes.
func readPatchFile(path string) ([]byte, error) {
	// Non-blocking: a FIFO planted in a workspace is refused, not waited on.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMemoryPatchBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxMemoryPatchBytes {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxMemoryPatchBytes)
	}
	return b, nil
}

func printMemoryReview(h *host, rv deployment.MemoryReview, out string) {
	fmt.Fprintf(h.stdout, "proposed against memory commit %s\n", rv.Base)
	for _, c := range rv.Changes {
		fmt.Fprintf(h.stdout, "  %s %s (%s)\n", c.Op, c.ID, c.Path)
	}
	if len(rv.Conflicts) == 0 {
		fmt.Fprintln(h.stdout, "no conflicts")
	}
	for _, c := range rv.Conflicts {
		fmt.Fprintf(h.stdout, "conflict %s: %s\n", c.Code, oneLine(c.Reason))
	}
	switch {
	case rv.Patch == "":
		fmt.Fprintln(h.stdout, "no patch: a conflict at a path leaves nothing to apply")
	case out != "":
		fmt.Fprintf(h.stdout, "patch %s written to %s (git am it on %s)\n", rv.PatchSHA256, out, rv.Base)
	default:
		fmt.Fprintf(h.stdout, "patch %s, %d file(s); --out FILE writes it for git am\n", rv.PatchSHA256, len(rv.Files))
	}
}
