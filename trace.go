package pablo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/internal/jsonx"
)

// DefaultTraceMaxBytes is the default bound of a native trace file
// (options.trace.max_bytes).
const DefaultTraceMaxBytes = 268_435_456

// TraceTerminalReserve is the room a TraceWriter keeps for the terminal
// run.finished record from the moment it opens: no other record may eat
// it. A trace bound must be at least this large.
const TraceTerminalReserve = 4096

// ErrTraceSetup is the sentinel kind of every failure to set up a native
// trace (a host maps it to the trace_setup_failed pre-admission code).
var ErrTraceSetup = errors.New("pablo: trace setup failed")

// ErrTraceClosed is returned for records written after the terminal record
// or after Close.
var ErrTraceClosed = errors.New("pablo: trace is closed")

// TraceError explains why a trace could not be opened.
type TraceError struct {
	// Path is the trace path (or path template) involved.
	Path string
	// Reason says what to change.
	Reason string
	// Err is the cause, if any.
	Err error
}

func (e *TraceError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("trace %q: %s: %v", e.Path, e.Reason, e.Err)
	}
	return fmt.Sprintf("trace %q: %s", e.Path, e.Reason)
}

// Unwrap returns the cause.
func (e *TraceError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTraceSetup) true.
func (e *TraceError) Is(target error) bool { return target == ErrTraceSetup }

// TraceWriterOptions configure a TraceWriter.
type TraceWriterOptions struct {
	// MaxBytes bounds the file, terminal record included; 0 means
	// DefaultTraceMaxBytes. It must be at least TraceTerminalReserve.
	MaxBytes int64
	// CaptureContent writes model text, tool arguments, tool results and
	// the final output. Without it those fields are null and only their
	// byte counts are kept.
	CaptureContent bool
	// Mask, when set, rewrites every captured content value before it is
	// written (a host passes its known-secret masker). It must return
	// its input when nothing matched and never panic.
	Mask func([]byte) []byte
}

// TraceWriter writes a task's events as a native JSONL trace: one JSON
// object per line, in the order the events arrive. The file is created
// new (never reused, never through a symlink) with mode 0600. The writer
// never grows the file past MaxBytes: room for the terminal run.finished
// record is reserved when it opens, a record that would eat into it is
// dropped and counted, and the terminal record says how many were.
//
// The task input and the host instructions are never written: no event
// carries them. TraceWriter is safe for concurrent use (a supervised tree
// shares one writer).
type TraceWriter struct {
	opts TraceWriterOptions

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
	hdrOf   Event
}

// OpenTrace creates a new trace file at path: it fails when anything
// (a file, a directory, a symlink, even a dangling one) already exists
// there, and never follows a symlink at the final component.
func OpenTrace(path string, opts TraceWriterOptions) (*TraceWriter, error) {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultTraceMaxBytes
	}
	if opts.MaxBytes < TraceTerminalReserve {
		return nil, &TraceError{Path: path, Reason: fmt.Sprintf("max_bytes %d is below the %d bytes reserved for the terminal record; raise trace.max_bytes", opts.MaxBytes, TraceTerminalReserve)}
	}
	if path == "" {
		return nil, &TraceError{Path: path, Reason: "the trace path is empty"}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
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
		return nil, &TraceError{Path: path, Reason: reason, Err: errors.Unwrap(err)}
	}
	return &TraceWriter{opts: opts, f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// OpenTrace is the package's OpenTrace for a trace of this deployment's
// tasks: the file is reserved from its runtimes' workspace tools (by device
// and inode), so when it lies in the workspace the model can never read,
// write, list or search it, under any name or hard link. TraceSink opens
// through it; a host opening its own trace path does too.
func (d *Deployment) OpenTrace(path string, opts TraceWriterOptions) (*TraceWriter, error) {
	tw, err := OpenTrace(path, opts)
	if err != nil {
		return nil, err
	}
	if fi, err := tw.f.Stat(); err == nil {
		d.reserved.Add(fi)
	}
	return tw, nil
}

// Write records one event. It is a Sink: pass tw.Write as
// HostOptions.Sink, or call it from the host's own sink (see ChainSinks).
// A record that does not fit the bound is dropped and counted, not an
// error; an I/O failure is an error (the engine then fails the task with
// event_sink_io).
func (tw *TraceWriter) Write(ev Event) error {
	if plainText(&ev) {
		// The bulk of a trace: masked outside the lock, then encoded under
		// it into the writer's own buffer, with the run's header encoded
		// once.
		var text string
		if tw.opts.CaptureContent {
			text = tw.maskString(ev.Text)
		}
		tw.mu.Lock()
		defer tw.mu.Unlock()
		if err := tw.open(); err != nil {
			return err
		}
		tw.scratch = appendText(tw.scratch[:0], &ev, tw.opts.CaptureContent, text, tw.header(&ev))
		err := tw.record(tw.scratch, false)
		if cap(tw.scratch) > maxScratch {
			tw.scratch = nil // one long output does not stay pinned
		}
		return err
	}
	terminal := ev.Type == EventRunFinished && ev.Agent.Depth == 0 && ev.Agent.ParentAgentID == ""
	line, err := tw.encode(ev, true)
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

// maxScratch is the most buffer a TraceWriter keeps between lines.
const maxScratch = 64 << 10

// open reports why nothing more can be written, if anything; tw.mu must
// be held.
func (tw *TraceWriter) open() error {
	if tw.err != nil {
		return tw.err
	}
	if tw.terminal || tw.f == nil {
		return ErrTraceClosed
	}
	return nil
}

// record writes a record other than the terminal one, or drops and counts
// it when it would eat into the terminal reserve; tw.mu must be held.
func (tw *TraceWriter) record(line []byte, flush bool) error {
	if tw.written+int64(len(line)) > tw.opts.MaxBytes-TraceTerminalReserve {
		tw.dropped++
		tw.droppedBytes += uint64(len(line))
		return nil
	}
	return tw.put(line, flush)
}

// terminalLine makes the terminal record fit what is left (never less
// than TraceTerminalReserve): it notes dropped records, strips captured
// output when the full record does not fit, and falls back to a minimal
// record as a last resort.
func (tw *TraceWriter) terminalLine(ev Event, line []byte) []byte {
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
func (tw *TraceWriter) withTruncation(line []byte) []byte {
	out := make([]byte, 0, len(line)+96)
	out = append(out, line[:len(line)-2]...) // drop "}\n"
	out = fmt.Appendf(out, `,"trace_truncated":{"limit":"trace_bytes","dropped_records":"%d","dropped_bytes":"%d"}}`+"\n", tw.dropped, tw.droppedBytes)
	return out
}

func (tw *TraceWriter) put(line []byte, flush bool) error {
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
func (tw *TraceWriter) Written() int64 {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.written
}

// Dropped reports how many records were dropped to keep the bound.
func (tw *TraceWriter) Dropped() uint64 {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.dropped
}

// Close flushes and closes the file, syncing it to stable storage. Records
// after Close fail with ErrTraceClosed.
func (tw *TraceWriter) Close() error {
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

// Trace records. Each embeds the event and shadows its content fields
// (encoding/json lets the shallower field win), so content is null unless
// captured and byte counts are always present.
type (
	traceText struct {
		Event
		Text      *string `json:"text"`
		TextBytes int     `json:"text_bytes"`
	}
	traceToolStarted struct {
		Event
		Call traceCall `json:"call"`
	}
	traceCall struct {
		ID             string          `json:"id"`
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments"`
		ArgumentsBytes int             `json:"arguments_bytes"`
	}
	traceToolFinished struct {
		Event
		Result      json.RawMessage `json:"result"`
		ResultBytes int             `json:"result_bytes"`
	}
	traceRunFinished struct {
		Event
		Outcome *traceOutcome `json:"outcome"`
	}
	traceOutcome struct {
		Outcome
		Output      *string `json:"output"`
		OutputBytes int     `json:"output_bytes"`
	}
)

var jsonNull = json.RawMessage("null")

// plainText reports whether ev is a text delta or a tool output that
// carries nothing but its text and, for an output, its call, name and
// stream: the lines of a streamed answer, which appendText writes by hand.
func plainText(ev *Event) bool {
	d := &ev.EventData
	return (d.Type == EventTextDelta || d.Type == EventToolOutput) &&
		d.Deployment == nil && d.Provider == "" && d.Model == "" && d.ModelRoute == nil &&
		d.Status == "" && d.FinishReason == "" && d.Usage == nil && d.OutputBytes == nil && d.Call == nil &&
		len(d.Result) == 0 && d.Skill == nil && d.Outcome == nil && d.Accounting == nil && d.Masked == 0
}

// appendText appends the line encode writes for a plainText event,
// with text as its captured (masked) text, field for field in the same
// order, for a fraction of the cost: a streamed answer writes one per
// delta. (The JSON values are the same;
// encoding/json spells U+2028, U+2029 and invalid UTF-8 as escapes.)
func appendText(b []byte, ev *Event, capture bool, text string, header []byte) []byte {
	b = append(b, `{"schema_version":`...)
	b = jsonx.AppendString(b, ev.SchemaVersion)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, `,"root_seq":`...)
	b = strconv.AppendUint(b, ev.RootSeq, 10)
	b = append(b, `,"timestamp_unix_micros":`...)
	b = strconv.AppendInt(b, ev.TimestampUnixMicros, 10)
	b = append(b, header...)
	b = append(b, `,"type":`...)
	b = jsonx.AppendString(b, string(ev.Type))
	for _, f := range [...]struct{ key, value string }{{`,"call_id":`, ev.CallID}, {`,"name":`, ev.Name}, {`,"stream":`, ev.Stream}} {
		if f.value != "" {
			b = append(b, f.key...)
			b = jsonx.AppendString(b, f.value)
		}
	}
	b = append(b, `,"text":`...)
	if capture {
		b = jsonx.AppendString(b, text)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"text_bytes":`...)
	b = strconv.AppendInt(b, int64(len(ev.Text)), 10)
	return append(b, "}\n"...)
}

// header returns appendHeader's bytes for ev, encoded again only when the
// run or the agent changed: every event of an agent has the same. tw.mu
// must be held.
func (tw *TraceWriter) header(ev *Event) []byte {
	h := &tw.hdrOf
	if tw.hdr == nil || h.RunID != ev.RunID || h.SessionID != ev.SessionID || h.TraceID != ev.TraceID || h.Agent != ev.Agent {
		tw.hdr = appendHeader(tw.hdr[:0], ev)
		tw.hdrOf = Event{RunID: ev.RunID, SessionID: ev.SessionID, TraceID: ev.TraceID, Agent: ev.Agent}
	}
	return tw.hdr
}

// appendHeader appends ev's run and agent fields as a trace line has them,
// from run_id to the end of the agent object.
func appendHeader(b []byte, ev *Event) []byte {
	b = append(b, `,"run_id":`...)
	b = jsonx.AppendString(b, ev.RunID)
	b = append(b, `,"session_id":`...)
	b = jsonx.AppendString(b, ev.SessionID)
	b = append(b, `,"trace_id":`...)
	b = jsonx.AppendString(b, ev.TraceID)
	b = append(b, `,"agent":{"agent_id":`...)
	b = jsonx.AppendString(b, ev.Agent.AgentID)
	b = append(b, `,"root_run_id":`...)
	b = jsonx.AppendString(b, ev.Agent.RootRunID)
	if ev.Agent.ParentAgentID != "" {
		b = append(b, `,"parent_agent_id":`...)
		b = jsonx.AppendString(b, ev.Agent.ParentAgentID)
	}
	b = append(b, `,"kind":`...)
	b = jsonx.AppendString(b, ev.Agent.Kind)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(ev.Agent.Depth), 10)
	return append(b, '}')
}

// encode renders ev through encoding/json as one JSONL line (Write's
// plain path writes the same values by hand); content appears only when
// captured and allowed.
func (tw *TraceWriter) encode(ev Event, allowContent bool) ([]byte, error) {
	capture := tw.opts.CaptureContent && allowContent
	var v any = &ev
	switch ev.Type {
	case EventTextDelta, EventToolOutput:
		r := &traceText{Event: ev, TextBytes: len(ev.Text)}
		if capture {
			s := tw.maskString(ev.Text)
			r.Text = &s
		}
		v = r
	case EventToolStarted:
		if ev.Call != nil {
			r := &traceToolStarted{Event: ev, Call: traceCall{ID: ev.Call.ID, Name: ev.Call.Name, Arguments: jsonNull, ArgumentsBytes: len(ev.Call.Arguments)}}
			if capture && len(ev.Call.Arguments) > 0 {
				r.Call.Arguments = tw.maskJSON(ev.Call.Arguments)
			}
			v = r
		}
	case EventToolFinished:
		r := &traceToolFinished{Event: ev, Result: jsonNull, ResultBytes: len(ev.Result)}
		if len(ev.Result) > 0 {
			if capture {
				r.Result = tw.maskJSON(ev.Result)
			} else {
				r.Result = resultShape(ev.Result)
			}
		}
		v = r
	case EventRunFinished:
		if ev.Outcome != nil {
			o := &traceOutcome{Outcome: *ev.Outcome}
			if ev.Outcome.Output != nil {
				o.OutputBytes = len(*ev.Outcome.Output)
				if capture {
					s := tw.maskString(*ev.Outcome.Output)
					o.Output = &s
				}
			}
			v = &traceRunFinished{Event: ev, Outcome: o}
		}
	}
	// Without HTML escaping, as appendText writes and as the reference's
	// traces read; Encode ends the line.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (tw *TraceWriter) maskString(s string) string {
	if tw.opts.Mask == nil {
		return s
	}
	return string(tw.opts.Mask([]byte(s)))
}

// maskJSON masks a JSON value's bytes; a masker that breaks the JSON
// yields null rather than a corrupt line.
func (tw *TraceWriter) maskJSON(raw json.RawMessage) json.RawMessage {
	if tw.opts.Mask == nil {
		return raw
	}
	out := tw.opts.Mask(append([]byte(nil), raw...))
	if !json.Valid(out) {
		return jsonNull
	}
	return out
}

// resultShape keeps a tool result's status and policy_rule and nulls every
// other member: the shape without the content.
func resultShape(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return jsonNull
	}
	for k := range m {
		if k != "status" && k != "policy_rule" {
			m[k] = jsonNull
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return jsonNull
	}
	return out
}

// ExpandTracePath replaces every {session_id} in a trace path template.
// The session ID must be a safe file-name fragment (1..128 bytes of
// A-Z a-z 0-9 _ . -, not "." or ".."); any other brace is refused.
func ExpandTracePath(template, sessionID string) (string, error) {
	if !strings.Contains(template, "{") && !strings.Contains(template, "}") {
		return template, nil
	}
	if !validSessionID(sessionID) {
		return "", &TraceError{Path: template, Reason: fmt.Sprintf("session ID %q cannot name a file (want 1..128 bytes of A-Z a-z 0-9 _ . -)", truncateID(sessionID))}
	}
	out := strings.ReplaceAll(template, "{session_id}", sessionID)
	if strings.ContainsAny(out, "{}") {
		return "", &TraceError{Path: template, Reason: "the only template is the literal {session_id}"}
	}
	return out, nil
}

// validSessionID: a session ID names a trace file, so "." and ".." are
// out beside the shared name check.
func validSessionID(s string) bool {
	return ids.ValidName(s, 128) && s != "." && s != ".."
}

func truncateID(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ChainSinks returns a sink that hands each event to every non-nil sink in
// order and stops at the first error. A host chains a trace with its own
// sink this way:
//
//	trace, closer, err := d.TraceSink(sessionID)
//	...
//	defer closer.Close()
//	opts.Sink = pablo.ChainSinks(trace, mySink)
func ChainSinks(sinks ...func(Event) error) func(Event) error {
	var live []func(Event) error
	for _, s := range sinks {
		if s != nil {
			live = append(live, s)
		}
	}
	return func(ev Event) error {
		for _, s := range live {
			if err := s(ev); err != nil {
				return err
			}
		}
		return nil
	}
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
// here. Every other setup failure is a *TraceError (ErrTraceSetup).
//
// The engine masks known secrets in tool output before it emits events,
// and events never carry the task input or the instructions.
func (d *Deployment) TraceSink(sessionID string) (func(Event) error, io.Closer, error) {
	t := d.Options.Trace
	if t.Path == nil {
		return nil, nopCloser{}, nil
	}
	opts := TraceWriterOptions{MaxBytes: t.MaxBytes, CaptureContent: t.CaptureContent}
	open := func(session string) (*TraceWriter, error) {
		ref := *t.Path
		p, err := ExpandTracePath(ref.Path, session)
		if err != nil {
			return nil, err
		}
		ref.Path = p
		abs, err := d.ResolvePath(ref)
		if err != nil {
			return nil, &TraceError{Path: ref.String(), Reason: "the path does not resolve inside its root", Err: err}
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
	open func(session string) (*TraceWriter, error)

	mu  sync.Mutex
	tw  *TraceWriter
	err error
}

func (l *lazyTrace) Write(ev Event) error {
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
