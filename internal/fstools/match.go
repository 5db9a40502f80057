package fstools

import (
	"bytes"
	"errors"
	"io"
	"unicode/utf8"
)

// MaxMatchTextBytes bounds the text reported for one matching line. A longer
// line is still matched over its whole length, as a stream; its reported
// text is cut at a codepoint boundary and marked text_truncated.
const MaxMatchTextBytes = 8192

// searchChunk is the streaming buffer size of fs.search.
const searchChunk = 64 << 10

// found is one matching line.
type found struct {
	line      int64
	text      string
	truncated bool
	// context is the line as captured past the cut (at most textCap +
	// lookahead bytes), kept only for a cut line: masking judges the text
	// with what follows it, so a secret the cut splits is still found.
	context []byte
}

// cutLookahead is how far past the cut a matching line is captured for
// masking: redact.MaxPatternBytes and then some.
const cutLookahead = 16 << 10

// lineScanner finds the lines of a stream that contain a literal, using a
// fixed buffer whatever the file or line length. Chunks are cut at codepoint
// boundaries so each can be validated as UTF-8 on its own; the line that
// straddles two chunks is carried as a bounded head (for the reported text),
// its length, and a tail of len(query)-1 bytes (for matches that straddle).
type lineScanner struct {
	q       []byte
	textCap int
	buf     []byte

	line    int64  // number of the line pending or about to start
	head    []byte // first textCap bytes of the pending line
	length  int64  // bytes of the pending line so far
	last    byte   // last byte of the pending line
	matched bool   // the pending line contains q
	tail    []byte // last len(q)-1 bytes of the pending line
	win     []byte // scratch for the straddling check

	room  int // matches still wanted from this stream
	found []found
}

func newLineScanner(q []byte, chunk, textCap int) *lineScanner {
	k := len(q) - 1
	return &lineScanner{
		q: q, textCap: textCap,
		buf:  make([]byte, chunk+utf8.UTFMax-1),
		head: make([]byte, 0, textCap+cutLookahead),
		tail: make([]byte, 0, k),
		win:  make([]byte, 0, 2*k),
	}
}

// reset prepares the scanner for a new stream wanting at most room matches.
func (s *lineScanner) reset(room int) {
	s.line, s.length, s.matched, s.last = 1, 0, false, 0
	s.head, s.tail = s.head[:0], s.tail[:0]
	s.found = s.found[:0]
	s.room = room
}

// scan reads r to its end. It reports text=false, with no matches, as soon as
// a NUL byte or invalid UTF-8 appears, wherever in the stream: the file is
// binary and the matches found so far are dropped. step is called with the
// size of every read before it is processed and can stop the scan.
func (s *lineScanner) scan(r io.Reader, step func(n int) error) (text bool, err error) {
	carry := 0
	for {
		n, rerr := r.Read(s.buf[carry:])
		if n > 0 {
			if err := step(n); err != nil {
				return false, err
			}
		}
		eof := errors.Is(rerr, io.EOF)
		if rerr != nil && !eof {
			return false, rerr
		}
		end := carry + n
		keep := 0
		if !eof {
			keep = incompleteTail(s.buf[:end])
		}
		chunk := s.buf[:end-keep]
		if bytes.IndexByte(chunk, 0) >= 0 || !utf8.Valid(chunk) {
			s.found = s.found[:0]
			return false, nil
		}
		s.feed(chunk)
		carry = copy(s.buf, s.buf[end-keep:end])
		if eof {
			if s.length > 0 {
				s.endLine(false)
			}
			return true, nil
		}
	}
}

// incompleteTail returns how many trailing bytes of b form the beginning of
// a codepoint that continues beyond b.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return len(b) - i
			}
			return 0
		}
	}
	return 0
}

// feed processes one validated chunk.
func (s *lineScanner) feed(c []byte) {
	if len(s.found) >= s.room {
		return // only validation remains
	}
	if s.length > 0 {
		// Continue the line begun in an earlier chunk.
		e := bytes.IndexByte(c, '\n')
		seg := c
		if e >= 0 {
			seg = c[:e]
		}
		if !s.matched && len(s.tail) > 0 {
			k := min(len(seg), len(s.q)-1)
			s.win = append(append(s.win[:0], s.tail...), seg[:k]...)
			s.matched = bytes.Contains(s.win, s.q)
		}
		if !s.matched {
			s.matched = bytes.Contains(seg, s.q)
		}
		s.extend(seg)
		if e < 0 {
			return
		}
		s.endLine(true)
		c = c[e+1:]
	}
	for len(c) > 0 && len(s.found) < s.room {
		m := bytes.Index(c, s.q)
		if m < 0 {
			if last := bytes.LastIndexByte(c, '\n'); last >= 0 {
				s.line += int64(bytes.Count(c[:last], newline)) + 1
				c = c[last+1:]
			}
			s.extend(c)
			return
		}
		ls := bytes.LastIndexByte(c[:m], '\n') + 1
		s.line += int64(bytes.Count(c[:ls], newline))
		s.matched = true
		le := bytes.IndexByte(c[m:], '\n')
		if le < 0 {
			s.extend(c[ls:])
			return
		}
		s.extend(c[ls : m+le])
		s.endLine(true)
		c = c[m+le+1:]
	}
}

var newline = []byte{'\n'}

// extend appends seg to the pending line.
func (s *lineScanner) extend(seg []byte) {
	if len(seg) == 0 {
		return
	}
	s.length += int64(len(seg))
	s.last = seg[len(seg)-1]
	if room := s.textCap + cutLookahead - len(s.head); room > 0 {
		s.head = append(s.head, seg[:min(room, len(seg))]...)
	}
	k := len(s.q) - 1
	if k == 0 {
		return
	}
	if len(seg) >= k {
		s.tail = append(s.tail[:0], seg[len(seg)-k:]...)
		return
	}
	if drop := len(s.tail) + len(seg) - k; drop > 0 {
		s.tail = s.tail[:copy(s.tail, s.tail[drop:])]
	}
	s.tail = append(s.tail, seg...)
}

// endLine closes the pending line, recording it when it matched. terminated
// says it ended with LF, in which case one CR before the LF is dropped.
func (s *lineScanner) endLine(terminated bool) {
	if s.matched && len(s.found) < s.room {
		eff := s.length
		if terminated && eff > 0 && s.last == '\r' {
			eff--
		}
		captured := s.head[:min(int64(len(s.head)), eff)]
		text := captured[:min(len(captured), s.textCap)]
		f := found{line: s.line, truncated: eff > int64(s.textCap)}
		if f.truncated {
			text = text[:len(text)-incompleteTail(text)]
			f.context = append([]byte(nil), captured...)
		}
		f.text = string(text)
		s.found = append(s.found, f)
	}
	s.line++
	s.length, s.matched, s.last = 0, false, 0
	s.head, s.tail = s.head[:0], s.tail[:0]
}
