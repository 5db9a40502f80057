package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// errFrameTooLarge is a frame past its bound.
var errFrameTooLarge = errors.New("an SSE frame exceeds its bound")

// frameReader reads the data of Server-Sent Events frames: the "data:"
// lines of one event joined by "\n", the event ended by a blank line.
// Comments and the event, id and retry fields are read and dropped; a
// frame with no data line yields nothing. Lines end in LF, CRLF or CR.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf bytes.Buffer
	// scratch is the last line's storage, reused for the next.
	scratch []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 32<<10), max: max}
}

// next returns the next frame's data. At the end of the stream it returns
// io.EOF; a last frame not ended by a blank line is io.ErrUnexpectedEOF,
// so a cut stream never yields half a frame.
func (f *frameReader) next() ([]byte, error) {
	f.buf.Reset()
	hasData := false
	for {
		line, err := f.line()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(line) == 0 {
			if hasData {
				return bytes.Clone(f.buf.Bytes()), nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) != "data" {
			continue
		}
		if hasData {
			f.buf.WriteByte('\n')
		}
		if f.buf.Len()+len(value) > f.max {
			return nil, errFrameTooLarge
		}
		f.buf.Write(value)
		hasData = true
	}
}

// line reads one line without its ending, at most max+16 bytes. The end of
// the stream at a line boundary is io.EOF; inside a line it is
// io.ErrUnexpectedEOF.
func (f *frameReader) line() ([]byte, error) {
	line := f.scratch[:0]
	for {
		b, err := f.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		switch b {
		case '\n':
			f.scratch = line
			return line, nil
		case '\r':
			if nb, err := f.r.Peek(1); err == nil && nb[0] == '\n' {
				_, _ = f.r.ReadByte()
			}
			f.scratch = line
			return line, nil
		}
		if len(line) >= f.max+16 {
			return nil, errFrameTooLarge
		}
		line = append(line, b)
	}
}
