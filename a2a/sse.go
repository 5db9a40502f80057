package a2a

import (
	"errors"
	"io"

	ssereader "github.com/pabloagent/pablo/internal/sse"
)

// errFrameTooLarge is a frame past its bound.
var errFrameTooLarge = errors.New("an SSE frame exceeds its bound")

// frameReader reads the data of a SendStreamingMessage stream's events with
// the shared reader of internal/sse, whose rules (line endings, comments,
// the unterminated last event) it keeps.
type frameReader struct{ r *ssereader.Reader }

// newFrameReader bounds each event's data by max; a line may be 16 bytes
// longer, for its field name.
func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: ssereader.NewReader(r, ssereader.Options{MaxLine: max + 16, MaxEvent: max})}
}

// next returns the next frame's data, valid until the next call. At the
// end of the stream it returns io.EOF; a stream that ends inside an event
// is ssereader.ErrUnterminated (io.ErrUnexpectedEOF), so a cut stream never
// yields half a frame.
func (f *frameReader) next() ([]byte, error) {
	ev, err := f.r.Next()
	if errors.Is(err, ssereader.ErrBound) {
		return nil, errFrameTooLarge
	}
	return ev.Data, err
}
