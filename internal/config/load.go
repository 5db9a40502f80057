package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/internal/fsx"
	"github.com/pabloagent/pablo/internal/redact"
)

// LoadOptions say which deployment to load and what the host supplies.
type LoadOptions struct {
	// Config is the entry file. Required.
	Config string
	// ConfigRoot contains every imported file; default: the entry's
	// directory.
	ConfigRoot string
	// Profile selects a profile, overriding the entry's `profile`.
	Profile string
	// Bindings are the named host directories (--bind name=path).
	// Relative paths are anchored once to WorkDir.
	Bindings map[string]string
	// WorkDir anchors relative paths; default: the process working
	// directory.
	WorkDir string
	// Locked forces lock mode; an entry cannot turn it off.
	Locked bool
	// Overrides are typed per-run overrides (CLI flags map to these).
	Overrides []Override
	// LookupEnv reads declared environment bindings. Nil means no
	// environment: undeclared variables are never read either way.
	LookupEnv func(name string) (string, bool)
	// HostTrace says the host supplies its own trace destination (the CLI's
	// --trace), so trace.capture_content needs no trace.path.
	HostTrace bool
	// LoopbackHTTP lets http://127.0.0.1, http://[::1] and
	// http://localhost URLs stand in for remote endpoints: a host test
	// fixture. Never honoured under lock.
	LoopbackHTTP bool
	// UserConfig and WorkspaceConfig name the optional user and
	// workspace layers (options only), applied above the defaults and
	// below the entry. A locked deployment refuses both.
	UserConfig, WorkspaceConfig string
}

// Override is one typed per-run assignment, such as
// {Target: "limits.max_tool_calls", Value: int64(3)}.
type Override struct {
	Target string
	Value  any
}

// contribution is one ordered layer of option values.
type contribution struct {
	id      string
	kind    string
	locator string
	digest  string
	options map[string]any
}

// loader holds the state of one Load.
type loader struct {
	// ctx is LoadContext's: a loader lives for one call.
	ctx       context.Context
	opts      LoadOptions
	root      string // real config root
	entry     string // real entry path
	files     map[string]*document
	active    []string
	edges     int
	total     int
	contribs  []contribution
	layers    []map[string]any
	layerSrc  []string
	creds     map[string]any
	credSrc   map[string]string
	envs      map[string]any
	profiles  map[string]map[string]any
	profSrc   map[string]*document
	entryDoc  *document
	bindings  map[string]string
	sourceSeq int
	wd        string
}

// Load reads, composes and resolves a deployment. It reads no credential,
// starts nothing and touches no network. Every failure is a *Error.
// It is LoadContext with a context that is never cancelled.
func Load(opts LoadOptions) (*Deployment, error) {
	return LoadContext(context.Background(), opts)
}

// LoadContext is Load under ctx: every file is opened without blocking (a
// FIFO or a device is refused at once) and ctx ends a read in progress.
//
// A deployment error's message never holds a suspected secret: a value
// written where a credential name belongs (a token pasted as a header)
// is masked in the diagnostic like tool output.
func LoadContext(ctx context.Context, opts LoadOptions) (*Deployment, error) {
	d, err := loadContext(ctx, opts)
	var ce *Error
	if errors.As(err, &ce) {
		var builtins redact.Set // the built-in credential formats alone
		ce.Message, ce.Option = builtins.String(ce.Message), builtins.String(ce.Option)
	}
	return d, err
}

func loadContext(ctx context.Context, opts LoadOptions) (*Deployment, error) {
	if opts.Config == "" {
		return nil, &Error{Code: CodeInvalidValue, Message: "no deployment file given (--config)"}
	}
	wd := opts.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, &Error{Code: CodeInvalidValue, Message: "cannot read the working directory"}
		}
	}
	l := &loader{ctx: ctx, opts: opts, files: map[string]*document{}, creds: map[string]any{}, credSrc: map[string]string{},
		envs: map[string]any{}, profiles: map[string]map[string]any{}, profSrc: map[string]*document{}}
	bindings, err := resolveBindings(opts.Bindings, wd)
	if err != nil {
		return nil, err
	}
	l.bindings = bindings
	l.wd = wd
	entry := anchor(opts.Config, wd)
	realEntry, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return nil, &Error{Code: CodeImportPath, Source: opts.Config, Message: "cannot open the deployment file"}
	}
	rootDir := filepath.Dir(realEntry)
	if opts.ConfigRoot != "" {
		if rootDir, err = filepath.EvalSymlinks(anchor(opts.ConfigRoot, wd)); err != nil {
			return nil, &Error{Code: CodeImportPath, Message: "cannot open the config root"}
		}
	}
	l.root, l.entry = rootDir, realEntry
	if !within(rootDir, realEntry) {
		return nil, &Error{Code: CodeImportPath, Source: opts.Config, Message: "the entry file is outside the config root"}
	}
	l.contribs = append(l.contribs, contribution{id: l.nextSource(), kind: "defaults", locator: "builtin:deployment-defaults-v1"})
	if err := l.visit(realEntry, 1); err != nil {
		return nil, err
	}
	return l.resolve()
}

func (l *loader) nextSource() string {
	id := fmt.Sprintf("source-%04d", l.sourceSeq)
	l.sourceSeq++
	return id
}

func anchor(p, wd string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(wd, p)
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator)) || root == string(filepath.Separator)
}

// resolveBindings turns --bind values into real absolute directories.
func resolveBindings(in map[string]string, wd string) (map[string]string, error) {
	if len(in) > maxNamed {
		return nil, &Error{Code: CodeLimit, Message: fmt.Sprintf("more than %d path bindings", maxNamed)}
	}
	out := make(map[string]string, len(in))
	for name, p := range in {
		if !nameRE.MatchString(name) {
			return nil, &Error{Code: CodeBinding, Binding: shown(name, 64), Message: fmt.Sprintf("binding names match %s", nameRE)}
		}
		if p == "" || len(p) > maxPathBytes || strings.IndexByte(p, 0) >= 0 {
			return nil, &Error{Code: CodeBinding, Binding: name, Message: "the path must be 1..4096 bytes without NUL"}
		}
		real, err := filepath.EvalSymlinks(anchor(p, wd))
		if err != nil {
			return nil, &Error{Code: CodeBinding, Binding: name, Message: "the path does not name an existing directory"}
		}
		st, err := os.Stat(real)
		if err != nil || !st.IsDir() {
			return nil, &Error{Code: CodeBinding, Binding: name, Message: "the path is not a directory"}
		}
		out[name] = real
	}
	return out, nil
}

// visit loads one file and, depth first, its imports; then records its body.
func (l *loader) visit(real string, depth int) error {
	if slices.Contains(l.active, real) {
		chain := append(l.displayChain(), l.display(real))
		return &Error{Code: CodeImportCycle, Source: l.display(real), Chain: chain, Message: "an import leads back to a file that is still being loaded"}
	}
	if _, seen := l.files[real]; seen {
		return &Error{Code: CodeDuplicateImport, Source: l.display(real), Chain: append(l.displayChain(), l.display(real)), Message: "this file is imported more than once"}
	}
	if depth > maxFileDepth {
		return &Error{Code: CodeLimit, Source: l.display(real), Message: fmt.Sprintf("imports nest deeper than %d files", maxFileDepth)}
	}
	if len(l.files) >= maxFiles {
		return &Error{Code: CodeLimit, Source: l.display(real), Message: fmt.Sprintf("more than %d files", maxFiles)}
	}
	raw, err := readBounded(l.ctx, real, maxFileBytes)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.Source = l.display(real)
			return ce
		}
		return &Error{Code: CodeImportPath, Source: l.display(real), Message: "cannot read the file"}
	}
	l.total += len(raw)
	if l.total > maxTotalBytes {
		return &Error{Code: CodeLimit, Source: l.display(real), Message: fmt.Sprintf("configuration exceeds %d bytes in total", maxTotalBytes)}
	}
	doc, err := parseDocument(l.display(real), real, raw)
	if err != nil {
		return err
	}
	l.files[real] = doc
	if depth == 1 {
		l.entryDoc = doc
	}
	// The version is checked before imports or profiles are evaluated.
	if v, ok := doc.tree["schema_version"]; !ok || v != int64(1) {
		return doc.errf(CodeSchemaVersion, "/schema_version", "schema_version = 1 is required (got %s)", describe(v, ok))
	}
	imports, err := l.imports(doc, real)
	if err != nil {
		return err
	}
	l.active = append(l.active, real)
	for _, imp := range imports {
		l.edges++
		if l.edges > maxImportEdges {
			return doc.errf(CodeLimit, "/imports", "more than %d import edges", maxImportEdges)
		}
		if err := l.visit(imp, depth+1); err != nil {
			return err
		}
	}
	l.active = l.active[:len(l.active)-1]
	return l.body(doc, depth == 1)
}

func describe(v any, ok bool) string {
	if !ok {
		return "nothing"
	}
	if s, isStr := v.(string); isStr {
		return strconv.Quote(shown(s, 20))
	}
	return fmt.Sprint(v)
}

func (l *loader) display(real string) string {
	if rel, err := filepath.Rel(l.root, real); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(real)
}

func (l *loader) displayChain() []string {
	out := make([]string, len(l.active))
	for i, a := range l.active {
		out[i] = l.display(a)
	}
	return out
}

// readBounded reads a file the deployment names through fsx: a FIFO or a
// device is refused at once, never waited on, and ctx ends the read.
func readBounded(ctx context.Context, p string, max int) ([]byte, error) {
	raw, err := fsx.ReadFile(ctx, p, int64(max))
	switch {
	case err == nil:
		return raw, nil
	case errors.Is(err, fsx.ErrNotRegular):
		return nil, (&Error{Code: CodeImportPath, Message: "not a regular file (a FIFO, a device or a directory is never read)"}).WithCause(err)
	case errors.Is(err, fsx.ErrTooLarge):
		return nil, &Error{Code: CodeLimit, Message: fmt.Sprintf("file exceeds %d bytes", max)}
	case errors.Is(err, fsx.ErrChanged):
		return nil, &Error{Code: CodeInputChanged, Message: "the file changed while it was being read"}
	case ctx.Err() != nil:
		return nil, (&Error{Code: CodeImportPath, Message: "reading was cancelled"}).WithCause(ctx.Err())
	}
	return nil, err
}

// imports validates a file's import list and returns the real paths.
func (l *loader) imports(doc *document, real string) ([]string, error) {
	v, ok := doc.tree["imports"]
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, doc.errf(CodeInvalidValue, "/imports", "imports is an array of relative paths")
	}
	if len(list) > maxImportsPerFile {
		return nil, doc.errf(CodeLimit, "/imports", "more than %d imports in one file", maxImportsPerFile)
	}
	var out []string
	for i, e := range list {
		ptr := "/imports/" + strconv.Itoa(i)
		s, ok := e.(string)
		if !ok || s == "" || len(s) > maxPathBytes || strings.IndexByte(s, 0) >= 0 {
			return nil, doc.errf(CodeImportPath, ptr, "imports are 1..4096-byte relative paths")
		}
		if filepath.IsAbs(s) || strings.Contains(s, "://") || strings.ContainsAny(s, "*?[{\\") || strings.HasPrefix(s, "~") {
			return nil, doc.errf(CodeImportPath, ptr, "import %q must be a plain relative path (no absolute paths, URLs, globs or ~)", shown(s, 80))
		}
		lexical := filepath.Join(filepath.Dir(real), filepath.FromSlash(s))
		if !within(l.root, lexical) {
			return nil, doc.errf(CodeImportPath, ptr, "import %q leaves the config root", shown(s, 80))
		}
		if err := noSymlinkBelow(l.root, lexical); err != nil {
			ce := doc.errf(CodeImportPath, ptr, "import %q: %v", shown(s, 80), err)
			return nil, ce.WithCause(err)
		}
		out = append(out, lexical)
	}
	return out, nil
}

// noSymlinkBelow checks that no component of p below root is a symlink and
// that p is a regular file.
func noSymlinkBelow(root, p string) error {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return fmt.Errorf("outside the config root")
	}
	cur := root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if err != nil {
			return fmt.Errorf("does not exist")
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("symlinks are not followed")
		}
		if i == len(parts)-1 && !st.Mode().IsRegular() {
			return fsx.ErrNotRegular
		}
	}
	return nil
}
