package mcp

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/textx"
)

// Launcher bounds.
const (
	// maxShebangBytes bounds the "#!" line read from a launcher.
	maxShebangBytes = 256
	// maxLinkedPackages bounds the symlinked packages of a node_modules
	// directory that are followed to show their targets.
	maxLinkedPackages = 64
	// maxStderrCapture bounds the stderr a stdio server's process keeps;
	// maxStderrTail what of its end a startup failure quotes.
	maxStderrCapture = 16 << 10
	maxStderrTail    = 1024
)

// launch is how a configured stdio command is started: the program to
// exec, the arguments before the configured ones, and the host paths its
// sandbox must show for it to run.
type launch struct {
	program string
	pre     []string
	show    []string
}

// resolveLaunch reads a launcher the way npm and pip install them: a
// script whose "#!" line names its interpreter, often through env ("#!/usr/bin/env node"),
// reached through a symlink in a bin directory. An env interpreter is
// resolved to an absolute path with lookPath now, at load, since the
// server's environment is cleared and holds no PATH; the script then runs
// as the interpreter's argument. The sandbox is shown the package root the
// launcher lives in (the outermost node_modules above it, with the targets
// of its symlinked packages, or a Python virtual environment) and the
// interpreter's directory.
func resolveLaunch(command string, lookPath func(string) (string, error)) (launch, error) {
	l := launch{program: command}
	real, err := filepath.EvalSymlinks(command)
	if err != nil {
		real = command
	}
	for _, p := range []string{command, real} {
		l.show = append(l.show, packageRoots(p)...)
	}
	interp, args, ok := shebang(real)
	if !ok {
		return l, nil
	}
	if filepath.Base(interp) == "env" {
		name, rest := envProgram(args)
		if name == "" {
			return l, fmt.Errorf("the launcher's #! line runs env without a program")
		}
		if !filepath.IsAbs(name) {
			found, err := lookPath(name)
			if err != nil {
				return l, fmt.Errorf("the launcher's #! line runs %q through env, and this host's PATH has no %s: install it or configure its absolute path as the command", textx.Shorten(name, 64), textx.Shorten(name, 64))
			}
			name = found
		}
		l.program, l.pre = name, append(rest, command)
		interp = name
	}
	// The interpreter's directory, and the one it resolves to, must be
	// shown for the kernel or env to exec it.
	l.show = append(l.show, filepath.Dir(interp))
	if r, err := filepath.EvalSymlinks(interp); err == nil {
		l.show = append(l.show, filepath.Dir(r))
		// A virtual environment's interpreter is a symlink out of it.
		l.show = append(l.show, packageRoots(interp)...)
	}
	return l, nil
}

// shebang reads a script's "#!" line: the interpreter and its arguments.
func shebang(path string) (string, []string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	b := make([]byte, maxShebangBytes)
	n, _ := io.ReadFull(f, b)
	b = b[:n]
	if !bytes.HasPrefix(b, []byte("#!")) {
		return "", nil, false
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	fields := strings.Fields(strings.TrimSuffix(string(b[2:]), "\r"))
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return "", nil, false
	}
	return fields[0], fields[1:], true
}

// envProgram reads env's arguments on a "#!" line: its options (-S splits
// the rest, as the kernel passes it as one word) and the program.
func envProgram(args []string) (string, []string) {
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "-S" || a == "--split-string":
			args = args[1:]
		case strings.HasPrefix(a, "-S"):
			args = append(strings.Fields(a[2:]), args[1:]...)
		case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
			// An option or an assignment env would apply; the cleared
			// environment is the catalog's to set.
			args = args[1:]
		default:
			return a, slices.Clone(args[1:])
		}
	}
	return "", nil
}

// packageRoots returns the package root p lives in, if any: the
// outermost node_modules directory above it with the targets of the
// packages symlinked into it, or a Python virtual environment (the
// directory above bin holding pyvenv.cfg).
func packageRoots(p string) []string {
	var roots []string
	dir := filepath.Dir(p)
	if filepath.Base(dir) == "bin" {
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "pyvenv.cfg")); err == nil {
			roots = append(roots, filepath.Dir(dir))
		}
	}
	outer := ""
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			outer = d
		}
	}
	if outer == "" {
		return roots
	}
	roots = append(roots, outer)
	return append(roots, linkedPackages(outer)...)
}

// linkedPackages returns where the symlinked packages of a node_modules
// directory (npm link, workspaces) really are, when that is outside it.
func linkedPackages(nm string) []string {
	var out []string
	entries, _ := os.ReadDir(nm)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "@") && e.IsDir() {
			scoped, _ := os.ReadDir(filepath.Join(nm, e.Name()))
			for _, s := range scoped {
				names = append(names, filepath.Join(e.Name(), s.Name()))
			}
			continue
		}
		names = append(names, e.Name())
	}
	for _, n := range names {
		if len(out) == maxLinkedPackages {
			break
		}
		p := filepath.Join(nm, n)
		if info, err := os.Lstat(p); err != nil || info.Mode()&os.ModeSymlink == 0 {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil && !within(nm, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// hiddenPathRE finds the absolute paths a failing program names.
var hiddenPathRE = regexp.MustCompile(`(/[^\s'"():,\x60]+)`)

// hiddenPaths returns the paths a server's stderr names as missing that
// exist on the host but that its sandbox does not show, each with the
// read_paths entry that would show it.
func hiddenPaths(stderr string, shown func(string) bool) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, "ENOENT") && !strings.Contains(line, "Cannot find") && !strings.Contains(line, "No such file") && !strings.Contains(line, "not found") {
			continue
		}
		for _, m := range hiddenPathRE.FindAllString(line, 8) {
			p := filepath.Clean(m)
			if shown(p) {
				continue
			}
			if _, err := os.Stat(p); err != nil {
				continue
			}
			entry := p
			if info, err := os.Stat(p); err == nil && !info.IsDir() {
				entry = filepath.Dir(p)
			}
			if s := fmt.Sprintf("the sandbox hides %s, which the server tried to open; read_paths entry %q would show it", p, entry); !slices.Contains(out, s) {
				out = append(out, s)
			}
			if len(out) == 4 {
				return out
			}
		}
	}
	return out
}

// shownBy reports whether a sandbox with profile p and working directory
// dir shows path.
func shownBy(p sandbox.Profile, dir string) func(string) bool {
	return func(path string) bool {
		if sandbox.IsSystemPath(path) || (dir != "" && within(dir, path)) {
			return true
		}
		for _, r := range p.ReadPaths {
			if within(r, path) {
				return true
			}
		}
		return false
	}
}

// stderrTail is the end of a server's stderr, masked and bounded, for a
// startup failure's message: whole lines, visible text only.
func stderrTail(b []byte, mask func(string) string) string {
	s := string(bytes.ToValidUTF8(b, []byte("?")))
	if mask != nil {
		// Masked before it is cut: a secret cut in two would escape.
		s = mask(s)
	}
	s = strings.TrimSpace(s)
	if len(s) > maxStderrTail {
		s = s[len(s)-maxStderrTail:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
		s = "…" + s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, " | ")
}
