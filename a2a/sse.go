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
	return &frameReader{r: ssereader.NewReader(r, ssereader.Options{MaxLine: max + 16, MaxEvent: max, BufferSize: frameBufferSize})}
}

// frameBufferSize is a stream's read buffer. A task's events are a few
// hundred bytes, and every spawn_remote opens a stream: the reader's
// default 32 KiB, allocated and cleared for each, was a tenth of the
// child's own CPU in BenchmarkSpawnRemoteVsA2AGo. Longer lines are
// assembled from several reads.
const frameBufferSize = 4 << 10

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
