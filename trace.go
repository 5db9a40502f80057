package pablo

import (
	"io"
	"strings"
	"sync"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/tracefile"
)

// The native JSONL trace writer is the public package tracefile; these are
// the root's names for its types, so a host that runs a deployment needs
// no second import.

var (
	// ErrTraceSetup is the sentinel kind of every failure to set up a
	// native trace (a host maps it to the trace_setup_failed pre-admission
	// code).
	ErrTraceSetup = tracefile.ErrSetup
	// ErrTraceClosed is returned for records written after the terminal
	// record or after Close.
	ErrTraceClosed = tracefile.ErrClosed
)

// OpenTrace creates a new trace file at path: it fails when anything
// (a file, a directory, a symlink, even a dangling one) already exists
// there, and never follows a symlink at the final component. A host that
// runs a deployment opens its traces with Deployment.OpenTrace instead, so
// that the workspace tools can never reach them.
func OpenTrace(path string, opts tracefile.Options) (*tracefile.Writer, error) {
	return tracefile.Open(path, opts)
}

// OpenTrace is the package's OpenTrace for a trace of this deployment's
// tasks: the file is reserved from its runtimes' workspace tools (by device
// and inode), so when it lies in the workspace the model can never read,
// write, list or search it, under any name or hard link. TraceSink opens
// through it; a host opening its own trace path does too.
func (d *Deployment) OpenTrace(path string, opts tracefile.Options) (*tracefile.Writer, error) {
	tw, err := OpenTrace(path, opts)
	if err != nil {
		return nil, err
	}
	if fi, err := tracefile.FileInfo(tw); err == nil {
		d.reserved.Add(fi)
	}
	return tw, nil
}

// ChainSinks returns a sink that hands each event to every non-nil sink in
// order and stops at the first error. A host chains a trace with its own
// sink this way:
//
//	trace, closer, err := d.TraceSink(sessionID)
//	...
//	defer closer.Close()
//	opts.Sink = pablo.ChainSinks(trace, mySink)
func ChainSinks(sinks ...func(event.Event) error) func(event.Event) error {
	var live []func(event.Event) error
	for _, s := range sinks {
		if s != nil {
			live = append(live, s)
		}
	}
	return func(ev event.Event) error {
		for _, s := range live {
			if err := s(ev); err != nil {
				return err
			}
		}
		return nil
	}
}

// TraceOptions are the trace options of options.trace and options.audit:
// the bound, content capture, and the tool profile's and each
// capability's audit level. A host that opens a trace of its own
// (OpenTrace) passes them, so the deployment's audit levels hold.
func (d *Deployment) TraceOptions() tracefile.Options {
	o := d.c.Options
	opts := tracefile.Options{MaxBytes: o.Trace.MaxBytes, CaptureContent: o.Trace.CaptureContent, ToolAudit: tracefile.AuditLevel(o.Audit.Level)}
	if len(o.Audit.Capabilities) > 0 {
		opts.Audit = make(map[string]tracefile.AuditLevel, len(o.Audit.Capabilities))
		for id, l := range o.Audit.Capabilities {
			opts.Audit[id] = tracefile.AuditLevel(l)
		}
	}
	return opts
}

// TraceSink opens the deployment's native trace (options.trace.path, with
// {session_id} expanded and the result resolved like any path reference)
// with its max_bytes and capture_content, and returns it as a sink plus
// the closer the host calls after the task settles.
//
// When options.trace.path is unset the sink is nil and the closer does
// nothing. When sessionID is empty and the path holds {session_id}, the
// file is created at the first event, named after that event's session
// ID; a failure then fails the task with event_sink_io instead of failing
// here. Every other setup failure is a *tracefile.Error (ErrTraceSetup).
//
// The engine masks known secrets in tool output before it emits events,
// and events never carry the task input or the instructions.
func (d *Deployment) TraceSink(sessionID string) (func(event.Event) error, io.Closer, error) {
	t := d.c.Options.Trace
	if t.Path == nil {
		return nil, nopCloser{}, nil
	}
	opts := d.TraceOptions()
	open := func(session string) (*tracefile.Writer, error) {
		ref := *t.Path
		p, err := tracefile.ExpandPath(ref.Path, session)
		if err != nil {
			return nil, err
		}
		ref.Path = p
		abs, err := d.resolvePath(ref)
		if err != nil {
			return nil, &tracefile.Error{Path: ref.String(), Reason: "the path does not resolve inside its root", Err: err}
		}
		return d.OpenTrace(abs, opts)
	}
	if sessionID != "" || !strings.Contains(t.Path.Path, "{session_id}") {
		tw, err := open(sessionID)
		if err != nil {
			return nil, nopCloser{}, err
		}
		return tw.Write, tw, nil
	}
	l := &lazyTrace{open: open}
	return l.Write, l, nil
}

// lazyTrace opens its writer at the first event, named after its session.
type lazyTrace struct {
	open func(session string) (*tracefile.Writer, error)

	mu  sync.Mutex
	tw  *tracefile.Writer
	err error
}

func (l *lazyTrace) Write(ev event.Event) error {
	l.mu.Lock()
	if l.tw == nil && l.err == nil {
		l.tw, l.err = l.open(ev.SessionID)
	}
	tw, err := l.tw, l.err
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return tw.Write(ev)
}

func (l *lazyTrace) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tw == nil {
		return nil
	}
	return l.tw.Close()
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
