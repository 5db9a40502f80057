// Package tracefile writes a task's events as a native JSONL trace: one
// JSON object per line, in the order the events arrive, in a file created
// new (never reused, never through a symlink) with mode 0600 and never
// grown past its bound. Room for the terminal run.finished record is kept
// from the moment the file opens; a record that would eat into it is
// dropped and counted, and the terminal record says how many were.
//
// Content (model text, tool arguments, tool results, the final output) is
// written only when [Options.CaptureContent] asks for it, masked by
// [Options.Mask]; otherwise only its byte counts are. Text deltas and tool
// output, the bulk of any trace, are encoded by hand (see appendText); every
// other record goes through encoding/json. A test holds the two to the
// same bytes for every field of event.Event, so a field added to the event
// cannot be forgotten by the hand encoder.
//
// A host names [Writer], [Options] and [Error] here or by the root's names
// for them (tracefile.Writer, tracefile.Options, tracefile.Error);
// pablo.Deployment opens a trace of its tasks (its path template, its
// bound) through [Open], reserving the file from the workspace tools.
package tracefile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/jsonx"
)

// DefaultMaxBytes is the default bound of a native trace file
// (options.trace.max_bytes).
const DefaultMaxBytes = 268_435_456

// TerminalReserve is the room a Writer keeps for the terminal
// run.finished record from the moment it opens: no other record may eat
// it. A trace bound must be at least this large.
const TerminalReserve = 4096

// Options configure a Writer.
type Options struct {
	// MaxBytes bounds the file, terminal record included; 0 means
	// DefaultMaxBytes. It must be at least TerminalReserve.
	MaxBytes int64
	// CaptureContent writes model text, tool arguments, tool results and
	// the final output. Without it those fields are null and only their
	// byte counts are kept.
	CaptureContent bool
	// ToolAudit is the tool profile's audit level (seed 002): every tool
	// capability's unless Audit names it. Empty: content when
	// CaptureContent is set, metadata otherwise.
	ToolAudit AuditLevel
	// Audit holds, by capability ID (shell.run, mcp/SERVER/TOOL, ...),
	// a tool's own audit level, over ToolAudit and CaptureContent.
	Audit map[string]AuditLevel
	// Mask, when set, rewrites every captured content value before it is
	// written (a host passes its known-secret masker). It must return
	// its input when nothing matched and never panic.
	Mask func([]byte) []byte
}

// Writer writes a task's events as a native JSONL trace: one JSON
// object per line, in the order the events arrive. The file is created
// new (never reused, never through a symlink) with mode 0600. The writer
// never grows the file past MaxBytes: room for the terminal run.finished
// record is reserved when it opens, a record that would eat into it is
// dropped and counted, and the terminal record says how many were.
//
// The task input and the host instructions are never written: no event
// carries them. Writer is safe for concurrent use (a supervised tree
// shares one writer).
type Writer struct {
	opts Options

	mu           sync.Mutex
	f            *os.File
	w            *bufio.Writer
	written      int64
	dropped      uint64
	droppedBytes uint64
	terminal     bool
	err          error

	// For plain text records (see appendText): a buffer (dropped when a
	// line grew it past maxScratch), and the encoded run and agent header
	// of the latest one with the event it came from.
	scratch []byte
	hdr     []byte
	hdrOf   event.Event
}

// FileInfo describes the trace file tw writes: a host that must keep the
// file out of reach of its own tools reserves it by device and inode. It is
// a function of the package, not a method, so tracefile.Writer does not
// show it to hosts.
func FileInfo(tw *Writer) (os.FileInfo, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.f == nil {
		return nil, ErrClosed
	}
	return tw.f.Stat()
}

// Open creates a new trace file at path: it fails when anything
// (a file, a directory, a symlink, even a dangling one) already exists
// there, and never follows a symlink at the final component.
func Open(path string, opts Options) (*Writer, error) {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxBytes < TerminalReserve {
		return nil, &Error{Path: path, Reason: fmt.Sprintf("max_bytes %d is below the %d bytes reserved for the terminal record; raise trace.max_bytes", opts.MaxBytes, TerminalReserve)}
	}
	if path == "" {
		return nil, &Error{Path: path, Reason: "the trace path is empty"}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|createFlags, 0o600)
	if err != nil {
		reason := "cannot create the file"
		switch {
		case errors.Is(err, os.ErrExist):
			reason = "a file already exists there; a trace is always a new file, so choose another path"
		case errors.Is(err, os.ErrNotExist):
			reason = "its directory does not exist"
		case errors.Is(err, syscall.ELOOP):
			reason = "the final component is a symlink, which is never followed"
		}
		return nil, &Error{Path: path, Reason: reason, Err: errors.Unwrap(err)}
	}
	return &Writer{opts: opts, f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// Write records one event. It is a sink: a host passes tw.Write as
// pablo.HostOptions.Sink, or calls it from its own sink (see
// pablo.ChainSinks).
// A record that does not fit the bound is dropped and counted, not an
// error; an I/O failure is an error (the engine then fails the task with
// event_sink_io).
func (tw *Writer) Write(ev event.Event) error {
	capture := tw.opts.CaptureContent
	if tw.opts.audited() {
		if l, ok := tw.opts.eventLevel(&ev); ok {
			if l == AuditNone && ev.Type == event.ToolOutput {
				return nil // audit level none keeps no output
			}
			capture = l == AuditContent
		}
	}
	if plainText(&ev) {
		// The bulk of a trace: masked outside the lock, then encoded under
		// it into the writer's own buffer, with the run's header encoded
		// once.
		var text string
		if capture {
			text = tw.maskString(ev.Text)
		}
		tw.mu.Lock()
		defer tw.mu.Unlock()
		if err := tw.open(); err != nil {
			return err
		}
		tw.scratch = appendText(tw.scratch[:0], &ev, capture, text, tw.header(&ev))
		err := tw.record(tw.scratch, false)
		if cap(tw.scratch) > maxScratch {
			tw.scratch = nil // one long output does not stay pinned
		}
		return err
	}
	terminal := ev.Type == event.RunFinished && ev.Agent.Depth == 0 && ev.Agent.ParentAgentID == ""
	line, err := tw.encodeAs(ev, capture, true)
	if err != nil {
		return fmt.Errorf("pablo: trace: encode %s: %w", ev.Type, err)
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if err := tw.open(); err != nil {
		return err
	}
	if !terminal {
		return tw.record(line, true)
	}
	tw.terminal = true
	line = tw.terminalLine(ev, line)
	if err := tw.put(line, true); err != nil {
		return err
	}
	return nil
}

// maxScratch is the most buffer a Writer keeps between lines.
const maxScratch = 64 << 10

// open reports why nothing more can be written, if anything; tw.mu must
// be held.
func (tw *Writer) open() error {
	if tw.err != nil {
		return tw.err
	}
	if tw.terminal || tw.f == nil {
		return ErrClosed
	}
	return nil
}

// record writes a record other than the terminal one, or drops and counts
// it when it would eat into the terminal reserve; tw.mu must be held.
func (tw *Writer) record(line []byte, flush bool) error {
	if tw.written+int64(len(line)) > tw.opts.MaxBytes-TerminalReserve {
		tw.dropped++
		tw.droppedBytes += uint64(len(line))
		return nil
	}
	return tw.put(line, flush)
}

// terminalLine makes the terminal record fit what is left (never less
// than TerminalReserve): it notes dropped records, strips captured
// output when the full record does not fit, and falls back to a minimal
// record as a last resort.
func (tw *Writer) terminalLine(ev event.Event, line []byte) []byte {
	left := tw.opts.MaxBytes - tw.written
	full := line
	if tw.droppedBytes > 0 {
		full = tw.withTruncation(line)
	}
	if int64(len(full)) <= left {
		return full
	}
	if stripped, err := tw.encode(ev, false); err == nil && len(stripped) < len(line) {
		tw.droppedBytes += uint64(len(line) - len(stripped))
		if s := tw.withTruncation(stripped); int64(len(s)) <= left {
			return s
		}
	}
	status := ""
	if ev.Outcome != nil {
		status = string(ev.Outcome.Status)
	}
	tw.droppedBytes += uint64(len(line))
	return fmt.Appendf(nil, `{"schema_version":%s,"seq":%d,"root_seq":%d,"type":"run.finished","outcome":{"status":%s},"trace_truncated":{"limit":"trace_bytes","dropped_records":"%d","dropped_bytes":"%d"}}`+"\n",
		jsonx.AppendString(nil, truncateID(ev.SchemaVersion)), ev.Seq, ev.RootSeq, jsonx.AppendString(nil, truncateID(status)), tw.dropped, tw.droppedBytes)
}

// withTruncation adds the trace_truncated note to an encoded line.
func (tw *Writer) withTruncation(line []byte) []byte {
	out := make([]byte, 0, len(line)+96)
	out = append(out, line[:len(line)-2]...) // drop "}\n"
	out = fmt.Appendf(out, `,"trace_truncated":{"limit":"trace_bytes","dropped_records":"%d","dropped_bytes":"%d"}}`+"\n", tw.dropped, tw.droppedBytes)
	return out
}

func (tw *Writer) put(line []byte, flush bool) error {
	if len(line) == 0 {
		return nil
	}
	if _, err := tw.w.Write(line); err != nil {
		tw.err = fmt.Errorf("pablo: trace write: %w", err)
		return tw.err
	}
	tw.written += int64(len(line))
	if flush {
		if err := tw.w.Flush(); err != nil {
			tw.err = fmt.Errorf("pablo: trace write: %w", err)
			return tw.err
		}
	}
	return nil
}

// Written reports the bytes written so far.
func (tw *Writer) Written() int64 {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.written
}

// Dropped reports how many records were dropped to keep the bound.
func (tw *Writer) Dropped() uint64 {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.dropped
}

// Close flushes and closes the file, syncing it to stable storage. Records
// after Close fail with ErrClosed.
func (tw *Writer) Close() error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.f == nil {
		return nil
	}
	var errs []error
	if tw.err == nil {
		errs = append(errs, tw.w.Flush())
	}
	errs = append(errs, tw.f.Sync(), tw.f.Close())
	tw.f = nil
	return errors.Join(errs...)
}
