package engine

import (
	"sync"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/redact"
)

// MaxStreamedOutput bounds the live output one tool call streams as
// tool.output events.
const MaxStreamedOutput = 64 << 10

// liveCall is the tool call whose live output streams now. Tools run one at
// a time, so one per task suffices; the task context carries streamOutput
// once, instead of a closure per call.
type liveCall struct {
	id, name string
	streamed int
	// streams names the streams seen so far; outMasks[i] masks streams[i].
	streams  [maxLiveStreams]string
	nstreams int
	// cut is set once the bound dropped output: what the maskers hold
	// back then may be the start of a secret whose rest was dropped.
	cut bool
	// failed is the outcome of the first tool.output event the ledger or
	// the sink refused: the call ends the task once it returns.
	failed *event.Outcome
	// unretained: the call's capability is at audit level none, so the
	// ledger keeps none of its output (emitOutput).
	unretained bool
}

// streamOutput emits a tool's live output as tool.output events, bounded per
// call; the final result still carries everything the tool captured.
func (s *step) streamOutput(stream string, chunk []byte) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	l := &s.live
	if l.id == "" || len(chunk) == 0 {
		return
	}
	if l.streamed >= MaxStreamedOutput {
		l.cut = true
		return
	}
	if len(chunk) > MaxStreamedOutput-l.streamed {
		chunk = chunk[:MaxStreamedOutput-l.streamed]
		l.cut = true
	}
	l.streamed += len(chunk)
	if l.failed != nil {
		return
	}
	var text string
	var masked int
	if m := s.outMask(stream); m != nil {
		text, masked = m.Write(chunk)
	} else {
		text, masked = s.t.rt.opts.Secrets.MaskString(string(chunk))
	}
	if text != "" {
		l.failed = s.emitOutput(event.EventData{Type: event.ToolOutput, CallID: l.id, Name: l.name, Stream: stream, Text: text, Masked: masked})
	}
}

// maxLiveStreams is how many streams of one call are masked across their
// chunks (stdout, stderr, progress); the chunks of any further stream are
// masked one by one.
const maxLiveStreams = 4

// outMask returns the masker of a stream of the live call.
func (s *step) outMask(stream string) *redact.Stream {
	l := &s.live
	for i := range l.nstreams {
		if l.streams[i] == stream {
			return &s.outMasks[i]
		}
	}
	if l.nstreams == maxLiveStreams {
		return nil
	}
	m := &s.outMasks[l.nstreams]
	m.Reset(s.t.rt.opts.Secrets)
	l.streams[l.nstreams] = stream
	l.nstreams++
	return m
}

// flushOutput emits what the live call's maskers held back, as its streams
// end with the call.
func (s *step) flushOutput() {
	l := &s.live
	for i := range l.nstreams {
		var text string
		var masked int
		if l.cut {
			text, masked = s.outMasks[i].Cut()
		} else {
			text, masked = s.outMasks[i].Flush()
		}
		if text != "" && l.failed == nil {
			l.failed = s.emitOutput(event.EventData{Type: event.ToolOutput, CallID: l.id, Name: l.name, Stream: l.streams[i], Text: text, Masked: masked})
		}
	}
}

// liveOutput is the live output of the tool call that streams now.
type liveOutput struct {
	// liveMu orders what reaches the live call from other goroutines: its
	// output, and its egress proxy's decisions (recordEgress).
	liveMu sync.Mutex
	live   liveCall
	// outMasks mask the live output of the call that streams now, one
	// per stream (live.streams names them).
	outMasks [maxLiveStreams]redact.Stream
	scratch  []byte // resultJSON's working buffer, reused
}
