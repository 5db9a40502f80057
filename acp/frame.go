package acp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// frameReader reads newline-delimited frames under the connection's
// bounds: one frame at most maxLine bytes (its newline and an optional
// carriage return before it excluded), all input at most maxInput bytes,
// every frame terminated, valid UTF-8 and a JSON object (its first
// non-space byte '{'). It does not parse JSON; the dispatcher does.
//
// The SDK's connection cannot be used for this (README): it reads with a
// bufio.Scanner capped at 10 MiB, and skips lines that do not parse
// instead of closing.
type frameReader struct {
	r        *bufio.Reader
	maxLine  int
	maxInput int64
	read     int64 // bytes consumed
	frames   int64
	line     []byte // the current frame, reused
}

func newFrameReader(in io.Reader, maxLine int, maxInput int64) *frameReader {
	size := 64 << 10
	if maxLine+2 < size {
		size = maxLine + 2
	}
	if size < 16 {
		size = 16
	}
	return &frameReader{r: bufio.NewReaderSize(in, size), maxLine: maxLine, maxInput: maxInput}
}

// next returns the next frame, valid until the following call. At the end
// of the input it returns io.EOF; a broken rule is a *FrameError or
// ErrInputLimit, after which the reader must not be used again.
func (fr *frameReader) next() ([]byte, error) {
	fr.line = fr.line[:0]
	for {
		chunk, err := fr.r.ReadSlice('\n')
		fr.read += int64(len(chunk))
		if fr.read > fr.maxInput {
			return nil, fmt.Errorf("%w: more than %d bytes of input", ErrInputLimit, fr.maxInput)
		}
		fr.line = append(fr.line, chunk...)
		switch {
		case err == nil:
			fr.frames++
			frame := bytes.TrimSuffix(fr.line[:len(fr.line)-1], []byte("\r"))
			if len(frame) > fr.maxLine {
				return nil, fr.fail(FrameTooLong, fmt.Sprintf("a frame is at most %d bytes", fr.maxLine))
			}
			return fr.check(frame)
		case errors.Is(err, bufio.ErrBufferFull):
			// Without its newline yet, the frame so far may hold one
			// carriage return past the bound, never more.
			if len(fr.line) > fr.maxLine+1 {
				fr.frames++
				return nil, fr.fail(FrameTooLong, fmt.Sprintf("a frame is at most %d bytes", fr.maxLine))
			}
		case errors.Is(err, io.EOF):
			if len(fr.line) == 0 {
				return nil, io.EOF
			}
			fr.frames++
			return nil, fr.fail(FrameUnterminated, "the input ended inside a frame: end every frame with a newline")
		default:
			return nil, err
		}
	}
}

func (fr *frameReader) check(frame []byte) ([]byte, error) {
	if !utf8.Valid(frame) {
		return nil, fr.fail(FrameInvalidUTF8, "frames are UTF-8")
	}
	i := 0
	for i < len(frame) && (frame[i] == ' ' || frame[i] == '\t' || frame[i] == '\r' || frame[i] == '\n') {
		i++
	}
	switch {
	case i < len(frame) && frame[i] == '[':
		return nil, fr.fail(FrameBatch, "JSON-RPC batches are not accepted: send one message per line")
	case i == len(frame) || frame[i] != '{':
		return nil, fr.fail(FrameNotObject, "a frame is one JSON-RPC message, a JSON object")
	}
	return frame, nil
}

func (fr *frameReader) fail(rule FrameRule, detail string) error {
	return &FrameError{Frame: fr.frames, Rule: rule, Detail: detail}
}
