package fstools

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// F01: pages never split a codepoint; concatenated pages are the file; every
// page carries the whole file's revision.
func TestReadPagesNeverSplitCodepoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	content := "aé€😀b" + strings.Repeat("日本語", 5) + "\n"
	f.write("u.txt", content)
	for maxBytes := int64(4); maxBytes <= 9; maxBytes++ {
		var got strings.Builder
		off := int64(0)
		for {
			r, err := f.tools.Read(bg(), ReadArgs{Path: "u.txt", Offset: off, MaxBytes: maxBytes})
			if err != nil {
				t.Fatalf("max %d offset %d: %v", maxBytes, off, err)
			}
			if !utf8.ValidString(r.Text) || int64(len(r.Text)) > maxBytes || r.Text == "" {
				t.Fatalf("max %d: bad page %q", maxBytes, r.Text)
			}
			if r.Revision != Revision([]byte(content)) || r.SizeBytes != int64(len(content)) {
				t.Fatalf("revision/size wrong: %+v", r)
			}
			got.WriteString(r.Text)
			if r.NextOffset == nil {
				if r.Truncated {
					t.Fatal("truncated without next_offset")
				}
				break
			}
			if !r.Truncated || *r.NextOffset != off+int64(len(r.Text)) {
				t.Fatalf("next_offset %d after %d+%d", *r.NextOffset, off, len(r.Text))
			}
			off = *r.NextOffset
		}
		if got.String() != content {
			t.Fatalf("max %d: pages joined to %q", maxBytes, got.String())
		}
	}
}

func TestReadRangeRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("u.txt", "a😀b") // 😀 is 4 bytes at offset 1
	tests := []struct {
		name     string
		offset   int64
		maxBytes int64
		text     string
		next     *int64
		code     Code
	}{
		{name: "offset equal to size is an empty page", offset: 6, text: ""},
		{name: "offset past size is invalid_range", offset: 7, code: InvalidRange},
		{name: "offset inside a codepoint is invalid_range", offset: 2, code: InvalidRange},
		{name: "page too small for one codepoint is invalid_range", offset: 1, maxBytes: 3, code: InvalidRange},
		{name: "page exactly one codepoint", offset: 1, maxBytes: 4, text: "😀", next: ptr(int64(5))},
		{name: "page backs off to a boundary", offset: 0, maxBytes: 4, text: "a", next: ptr(int64(1))},
		{name: "default page reads all", offset: 0, text: "a😀b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := f.tools.Read(bg(), ReadArgs{Path: "u.txt", Offset: tt.offset, MaxBytes: tt.maxBytes})
			if tt.code != "" {
				wantCode(t, err, tt.code)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != tt.text || (r.NextOffset == nil) != (tt.next == nil) || (tt.next != nil && *r.NextOffset != *tt.next) {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestReadEmptyFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("e.txt", "")
	r, err := f.tools.Read(bg(), ReadArgs{Path: "e.txt"})
	if err != nil || r.Text != "" || r.NextOffset != nil || r.Truncated || r.Revision != Revision(nil) {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestReadRecoverableCodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("dir/x.txt", "x")
	f.write("bin", "a\xffb")
	tests := []struct {
		name, path string
		code       Code
	}{
		{"missing file is not_found", "nope.txt", NotFound},
		{"missing parent is not_found", "nope/x.txt", NotFound},
		{"directory is not_file", "dir", NotFile},
		{"workspace is not_file", ".", NotFile},
		{"file as a directory is not_directory", "dir/x.txt/y", NotDirectory},
		{"invalid UTF-8 content is unsupported_encoding", "bin", UnsupportedEncoding},
		{"invalid UTF-8 path is unsupported_encoding", "a\xff", UnsupportedEncoding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.tools.Read(bg(), ReadArgs{Path: tt.path})
			wantCode(t, err, tt.code)
		})
	}
}

// F06: a FIFO is rejected before it is opened, so the call cannot block.
func TestReadRejectsFIFOWithoutOpening(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	if err := syscall.Mkfifo(f.path("pipe"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	_, err := f.tools.Read(bg(), ReadArgs{Path: "pipe"})
	wantCode(t, err, NotFile)
	r, err := f.tools.Search(bg(), SearchArgs{Path: ".", Query: "x"})
	if err != nil || len(r.Matches) != 0 {
		t.Fatalf("search over a FIFO: %+v %v", r, err)
	}
	l, err := f.tools.List(bg(), ListArgs{Path: "."})
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Type != TypeOther {
		t.Fatalf("list: %+v %v", l, err)
	}
}

// F07: an unreadable file is io_error without the OS message. Root reads a
// file whatever its mode, so under root (as CI runs) the test runs itself
// again in a child process that has dropped to nobody.
func TestReadUnreadableFileIsIOError(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv(asNobodyEnv) == "" {
		runAsNobody(t)
		return
	}
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("locked.txt", "x")
	if err := os.Chmod(f.path("locked.txt"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(f.path("locked.txt")); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("reading a mode-0 file as uid %d: %v, want EACCES", os.Geteuid(), err)
	}
	_, err := f.tools.Read(bg(), ReadArgs{Path: "locked.txt"})
	wantCode(t, err, IOError)
	if strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), f.dir) {
		t.Fatalf("raw OS message in %q", err)
	}
}

func TestReadMaxFileBytesBoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Limits: Limits{MaxFileBytes: 10}})
	f.write("ten", strings.Repeat("x", 10))
	f.write("eleven", strings.Repeat("x", 11))
	if _, err := f.tools.Read(bg(), ReadArgs{Path: "ten"}); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, err := f.tools.Read(bg(), ReadArgs{Path: "eleven"})
	wantLimit(t, err, FilesystemWork)
}

func TestReadHonoursCancellation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("a", "a")
	c, cancel := contextWithCancel()
	cancel()
	if _, err := f.tools.Read(c, ReadArgs{Path: "a"}); err == nil || !isCanceled(err) {
		t.Fatalf("err = %v", err)
	}
}

// Operating-system errors become codes without their messages, whoever runs
// the tests (root reads files whatever their mode, so F07 is also checked
// here at the mapping).
func TestOSErrorsMapToCodesWithoutOSMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	c := f.tools.begin(bg(), "fs.read")
	tests := []struct {
		errno syscall.Errno
		code  Code
	}{
		{syscall.EACCES, IOError}, {syscall.EPERM, IOError}, {syscall.EIO, IOError},
		{syscall.ENOENT, NotFound}, {syscall.ENOTDIR, NotDirectory},
	}
	for _, tt := range tests {
		err := c.fsErr("x", &os.PathError{Op: "openat", Path: "/private/host/path", Err: tt.errno})
		wantCode(t, err, tt.code)
		if strings.Contains(err.Error(), "/private/host/path") || strings.HasSuffix(err.Error(), ": "+tt.errno.Error()) {
			t.Fatalf("OS message leaked: %q", err)
		}
		if !errors.Is(err, tt.errno) {
			t.Fatalf("cause not kept for the host: %v", err)
		}
	}
}
