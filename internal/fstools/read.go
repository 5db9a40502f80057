package fstools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
)

// ReadResult is fs.read's payload.
type ReadResult struct {
	Path       string `json:"path"`
	Text       string `json:"text"`
	Offset     int64  `json:"offset"`
	NextOffset *int64 `json:"next_offset"`
	SizeBytes  int64  `json:"size_bytes"`
	// Revision is the lowercase hex SHA-256 of the entire file as captured.
	Revision string `json:"revision"`
	// Masked counts the secrets Options.MaskPage masked in Text.
	Masked    int  `json:"-"`
	Truncated bool `json:"truncated"`
	// FromClient says the text is the user's editor's (its buffer, read
	// through [Buffers]), not the file on disk.
	FromClient bool `json:"from_client,omitempty"`
}

// Revision returns the revision string of content: its lowercase hex
// SHA-256.
func Revision(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// Read runs fs.read: a bounded snapshot of the whole file, hashed, and one
// page of it that never splits a codepoint.
func (t *Tools) Read(ctx context.Context, a ReadArgs) (*ReadResult, error) {
	c := t.begin(ctx, authority.FSRead)
	if err := c.alive(); err != nil {
		return nil, err
	}
	if a.Offset < 0 {
		return nil, &ArgumentError{Tool: c.id, Field: "offset", Reason: "must not be negative"}
	}
	maxBytes := a.MaxBytes
	if maxBytes < 0 {
		return nil, &ArgumentError{Tool: c.id, Field: "max_bytes", Reason: "must be positive"}
	}
	if maxBytes == 0 {
		maxBytes = DefaultReadBytes
	}
	rel, parts, err := c.check(a.Path, authority.ResourceRead)
	if err != nil {
		return nil, err
	}
	tg, err := c.resolve(rel, parts, false)
	if err != nil {
		return nil, err
	}
	defer tg.close()
	data, err := c.snapshot(tg)
	if err != nil {
		return nil, err
	}
	fromClient := false
	if b := buffersOf(ctx); b != nil {
		// The editor's buffer, under the same bound as the file.
		if text, ok := b(ctx, rel); ok && (c.t.limits.MaxFileBytes <= 0 || int64(len(text)) <= c.t.limits.MaxFileBytes) {
			data, fromClient = []byte(text), true
		}
	}
	// A handed file's bytes are checked here, after the one read whose
	// bytes are returned: there is nothing between the check and the use.
	if err := c.checkPin(rel, data); err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, &Error{Tool: c.id, Code: UnsupportedEncoding, Path: rel, Detail: "the file is not UTF-8 text"}
	}
	size := int64(len(data))
	if a.Offset > size || (a.Offset < size && !utf8.RuneStart(data[a.Offset])) {
		return nil, &Error{Tool: c.id, Code: InvalidRange, Path: rel, Detail: "offset must be at most the file size and on a codepoint boundary; use 0 or a next_offset"}
	}
	end := size
	if maxBytes < size-a.Offset {
		end = a.Offset + maxBytes
		for end > a.Offset && !utf8.RuneStart(data[end]) {
			end--
		}
		if end == a.Offset {
			return nil, &Error{Tool: c.id, Code: InvalidRange, Path: rel, Detail: "max_bytes is too small to hold one codepoint; raise it"}
		}
	}
	res := &ReadResult{Path: rel, Text: string(data[a.Offset:end]), Offset: a.Offset, SizeBytes: size,
		Revision: Revision(data), Truncated: end < size, FromClient: fromClient}
	if t.maskPage != nil && (a.Offset > 0 || end < size) {
		// A page's edges may cut a secret: mask it with the file around.
		res.Text, res.Masked = t.maskPage(data, int(a.Offset), int(end))
	}
	if end < size {
		res.NextOffset = &end
	}
	return res, nil
}

// snapshot reads the whole regular file tg names, bounded by MaxFileBytes,
// and checks that it did not change while being read; it retries once.
func (c *call) snapshot(tg *target) ([]byte, error) {
	if err := c.regular(tg); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		data, stable, err := c.readOnce(tg)
		if err != nil {
			return nil, err
		}
		if stable {
			return data, nil
		}
		if attempt == 1 {
			return nil, &Error{Tool: c.id, Code: IOError, Path: tg.rel, Detail: "the file kept changing while being read; retry later"}
		}
		if err := c.alive(); err != nil {
			return nil, err
		}
	}
}

// regular rejects anything but a regular file before it is opened, so a FIFO
// or device is never opened.
func (c *call) regular(tg *target) error {
	if !tg.exists {
		return &Error{Tool: c.id, Code: NotFound, Path: tg.rel, Detail: "the file does not exist in the workspace"}
	}
	if !tg.info.Mode().IsRegular() {
		return &Error{Tool: c.id, Code: NotFile, Path: tg.rel, Detail: "the path is not a regular file (" + describe(tg.info.Mode()) + ")"}
	}
	if max := c.t.limits.MaxFileBytes; max > 0 && tg.info.Size() > max {
		return c.limit("limits.filesystem.max_file_bytes", max)
	}
	return nil
}

// openRegular opens tg's file read-only, never blocking (O_NONBLOCK) and
// verifying the opened file is the one inspected.
func (c *call) openRegular(tg *target) (*os.File, fs.FileInfo, error) {
	if h := c.t.hooks.betweenCheckAndOpen; h != nil {
		h(tg.rel, tg.name)
	}
	f, err := tg.parent.OpenFile(tg.name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, c.swapped(tg.parent, tg.rel, tg.name, err)
	}
	st, err := f.Stat()
	if err != nil || !os.SameFile(st, tg.info) || !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, c.swapped(tg.parent, tg.rel, tg.name, err)
	}
	return f, st, nil
}

// readChunk bounds one read step so cancellation is checked between steps.
const readChunk = 1 << 20

func (c *call) readOnce(tg *target) (data []byte, stable bool, err error) {
	f, st, err := c.openRegular(tg)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	max := c.t.limits.MaxFileBytes
	if max > 0 && st.Size() > max {
		return nil, false, c.limit("limits.filesystem.max_file_bytes", max)
	}
	data = make([]byte, 0, st.Size()+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n := min(cap(data)-len(data), readChunk)
		m, rerr := f.Read(data[len(data) : len(data)+n])
		data = data[:len(data)+m]
		if h := c.t.hooks.afterReadChunk; h != nil {
			h(tg.rel)
		}
		if max > 0 && int64(len(data)) > max {
			return nil, false, c.limit("limits.filesystem.max_file_bytes", max)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return nil, false, c.ioErr(tg.rel, rerr)
		}
		if err := c.alive(); err != nil {
			return nil, false, err
		}
	}
	after, err := f.Stat()
	if err != nil {
		return nil, false, c.ioErr(tg.rel, err)
	}
	stable = after.Size() == st.Size() && after.ModTime().Equal(st.ModTime()) && int64(len(data)) == st.Size()
	return data, stable, nil
}

func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}
