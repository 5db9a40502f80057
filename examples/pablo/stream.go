package main

import (
	"io"
	"os"
	"sync"

	"github.com/pabloagent/pablo/termtext"
)

// stream is one of the process's output streams, stdout or stderr, chosen
// once when a command starts. Every command writes its text through it:
// when the stream is a terminal, what a model, a tool, an MCP server, a
// Skill file, an Agent Card or a ledger record holds reaches the terminal
// escaped (termtext: C0 controls but newline and tab, DEL, C1 controls, bidi
// and the other format characters), so an OSC 52 clipboard write or a
// clear screen is shown, never acted on. Anywhere else (a pipe, a file, a
// test's buffer) the bytes pass exactly as written.
//
// On a terminal, the one way to write a control sequence is control:
// pablo's own live status line is the only user.
type stream struct {
	w   io.Writer
	tty bool
	mu  sync.Mutex
	// text escapes across writes: a rune or an escape sequence split
	// between two writes is escaped all the same.
	text termtext.Stream
	buf  []byte
}

// newStream wraps w, escaping when w is a terminal. With json, what the
// command writes to it is a JSON document, whose escapes are then JSON
// string escapes: the document keeps its meaning, a parser reading it
// off the terminal gets the same values.
func newStream(w io.Writer, json bool) *stream {
	f, ok := w.(*os.File)
	return &stream{w: w, tty: ok && isTerminalOutput(f), text: termtext.Stream{JSON: json}}
}

func (s *stream) Write(p []byte) (int, error) {
	if !s.tty {
		return s.w.Write(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = s.text.Append(s.buf[:0], string(p))
	if _, err := s.w.Write(s.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// printsJSON makes the stream's escapes JSON string escapes from here on:
// for a command that learns only from its deployment that it prints JSON
// (`pablo run` under options.interfaces.cli_output = "json").
func (s *stream) printsJSON() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text.JSON = true
}

// control writes seq, a control sequence of pablo's own, unescaped. Off a
// terminal it writes nothing: no control sequence reaches a pipe.
func (s *stream) control(seq string) {
	if !s.tty {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, seq)
}

// flush writes what an incomplete rune at the end of the output held back,
// as U+FFFD.
func (s *stream) flush() {
	if !s.tty {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.text.Flush(nil); len(b) > 0 {
		s.w.Write(b)
	}
}

// streamOf is the stream under w, a command's stdout or stderr, or nil
// when w is not one (a test's buffer handed to a function directly).
func streamOf(w io.Writer) *stream {
	if c, ok := w.(*countingWriter); ok {
		w = c.w
	}
	s, _ := w.(*stream)
	return s
}

// onTerminal reports whether w, a command's stdout or stderr, is a
// terminal.
func onTerminal(w io.Writer) bool {
	s := streamOf(w)
	return s != nil && s.tty
}

// rawOutput is the process's own stdout or stderr under w: what the ACP
// server writes its protocol to, byte for byte, with write deadlines set
// on the file itself.
func rawOutput(w io.Writer) io.Writer {
	if c, ok := w.(*countingWriter); ok {
		w = c.w
	}
	if s, ok := w.(*stream); ok {
		return s.w
	}
	return w
}
