package sse

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// drain reads r to its end into "type|data" strings.
func drain(r *Reader) (events []string, err error) {
	for {
		ev, err := r.Next()
		if err != nil {
			return events, err
		}
		events = append(events, ev.Type+"|"+string(ev.Data))
	}
}

func read(in string, opts Options) ([]string, *Reader, error) {
	r := NewReader(strings.NewReader(in), opts)
	events, err := drain(r)
	return events, r, err
}

var small = Options{MaxLine: 30, MaxEvent: 16, BufferSize: 16}

func TestEventStreamFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []string
		lastID   string
	}{
		{"LF", "data: a\n\n", []string{"|a"}, ""},
		{"CRLF", "data: a\r\n\r\n", []string{"|a"}, ""},
		{"CR", "data: a\r\rdata: b\r\r", []string{"|a", "|b"}, ""},
		{"MixedEndings", "data: a\r\ndata: b\rdata: c\n\r\n", []string{"|a\nb\nc"}, ""},
		{"DataLinesJoinWithLF", "data: a\ndata:b\ndata\n\n", []string{"|a\nb\n"}, ""},
		{"OneLeadingSpaceIsDropped", "data:  two\n\n", []string{"| two"}, ""},
		{"NoSpaceAfterColon", "data:a\n\n", []string{"|a"}, ""},
		{"EventType", "event: note\ndata: x\n\n", []string{"note|x"}, ""},
		{"EventTypeDoesNotCarryOver", "event: note\ndata: x\n\ndata: y\n\n", []string{"note|x", "|y"}, ""},
		{"EventWithoutDataIsNotReturned", "event: x\n\ndata: a\n\n", []string{"|a"}, ""},
		{"CommentsAreKeepAlives", ": ping\n:\ndata: a\n\n: ping\n", []string{"|a"}, ""},
		{"EmptyDataIsAnEvent", "data:\n\n", []string{"|"}, ""},
		{"BlankLinesBetweenEvents", "\n\n\ndata: a\n\n\n", []string{"|a"}, ""},
		{"ByteOrderMarkIsDropped", "\xef\xbb\xbfdata: x\n\n", []string{"|x"}, ""},
		{"OnlyOneByteOrderMark", "\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n", []string{"|y"}, ""},
		{"UnknownFieldsAreIgnored", "foo: bar\ndata: x\n\n", []string{"|x"}, ""},
		{"IDCountsOnceComplete", "id: 5\ndata: \n\n", []string{"|"}, "5"},
		{"IDWithoutDataStillCounts", "id: 6\n\n", nil, "6"},
		{"IDPersistsAcrossEvents", "id: 6\n\ndata: x\n\n", []string{"|x"}, "6"},
		{"EmptyIDClearsIt", "id: 6\n\nid\n\n", nil, ""},
		{"IDWithNULIsIgnored", "id: a\x00b\ndata: x\n\n", []string{"|x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, r, err := read(tc.in, small)
			if err != io.EOF {
				t.Fatalf("end %v, want io.EOF", err)
			}
			if !slices.Equal(got, tc.want) || r.LastEventID() != tc.lastID {
				t.Fatalf("events %q last ID %q, want %q %q", got, r.LastEventID(), tc.want, tc.lastID)
			}
		})
	}
}

// The rule the three former readers disagreed on: an event whose lines are
// not followed by the blank line that completes it is not returned, and
// the end of such a stream is ErrUnterminated, not io.EOF, so no caller can
// take a cut stream for a complete one.
func TestUnterminatedLastEventIsNotReturned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		want   []string
		lastID string
	}{
		{"data: a\n", nil, ""},
		{"data: a", nil, ""},
		{"data: a\r", nil, ""},
		{"event: x\n", nil, ""},
		{"retry: 5\n", nil, ""},
		{"data: a\n\ndata: b", []string{"|a"}, ""},
		{"data: a\n\ndata: no blank\n", []string{"|a"}, ""},
		{"id: 1\n\nid: 2\ndata: x\n", nil, "1"},
		{"data: a\n\n: a comment cut", []string{"|a"}, ""},
	} {
		got, r, err := read(tc.in, small)
		if !errors.Is(err, ErrUnterminated) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%q: end %v, want ErrUnterminated", tc.in, err)
		}
		if !slices.Equal(got, tc.want) || r.LastEventID() != tc.lastID {
			t.Errorf("%q: events %q last ID %q, want %q %q", tc.in, got, r.LastEventID(), tc.want, tc.lastID)
		}
	}
	// At an event boundary the end is clean, whatever follows the last
	// blank line but a field.
	for _, in := range []string{"", "\n", "data: a\n\n", "data: a\n\n\n", "data: a\r\n\r\n: ping\r\n", "data: a\r\r"} {
		if _, _, err := read(in, small); err != io.EOF {
			t.Errorf("%q: end %v, want io.EOF", in, err)
		}
	}
}

func TestEventStreamBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		opts     Options
		bound    string
	}{
		{"DataAtTheBound", "data: " + strings.Repeat("d", 16) + "\n\n", small, ""},
		{"DataOnePastTheBound", "data: " + strings.Repeat("d", 17) + "\n\n", small, "event"},
		{"JoinedDataAtTheBound", strings.Repeat("data: xx\n", 10) + "\n", Options{MaxLine: 30, MaxEvent: 29}, ""},
		{"JoinedDataPastTheBound", strings.Repeat("data: xx\n", 10) + "\n", Options{MaxLine: 30, MaxEvent: 28}, "event"},
		{"TypeAndDataAtTheBound", "event: 12345678\ndata: 12345678\n\n", small, ""},
		{"TypeAndDataPastTheBound", "event: 12345678\ndata: 123456789\n\n", small, "event"},
		{"TypeAfterDataPastTheBound", "data: 123456789\nevent: 12345678\n\n", small, "event"},
		{"LineAtTheBound", "data: " + strings.Repeat("d", 24) + "\n\n", Options{MaxLine: 30, MaxEvent: 64, BufferSize: 16}, ""},
		{"LineOnePastTheBound", "data: " + strings.Repeat("d", 25) + "\n\n", Options{MaxLine: 30, MaxEvent: 64, BufferSize: 16}, "line"},
		{"LongCommentIsALongLine", ":" + strings.Repeat("x", 100) + "\n", small, "line"},
		{"UnterminatedLongLine", "data: " + strings.Repeat("d", 100), small, "line"},
		{"EventsAtTheBound", strings.Repeat("data: a\n\n", 3), Options{MaxLine: 30, MaxEvent: 16, MaxEvents: 3}, ""},
		{"EventsPastTheBound", strings.Repeat("data: a\n\n", 3), Options{MaxLine: 30, MaxEvent: 16, MaxEvents: 2}, "events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := read(tc.in, tc.opts)
			var be *BoundError
			if tc.bound == "" {
				if err != io.EOF {
					t.Fatalf("end %v, want io.EOF", err)
				}
				return
			}
			if !errors.As(err, &be) || be.Bound != tc.bound || !errors.Is(err, ErrBound) {
				t.Fatalf("end %v, want a %s bound", err, tc.bound)
			}
		})
	}
}

func TestRetryIsASCIIDigitsOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		ok    bool
		ms    int64
	}{{"500", true, 500}, {"0", true, 0}, {"+5", false, 0}, {"-5", false, 0}, {"5s", false, 0}, {"", false, 0}, {"1_0", false, 0}, {"99999999999", false, 0}} {
		_, r, _ := read("retry: "+tc.value+"\n\n", Options{MaxLine: 64, MaxEvent: 64})
		d, ok := r.Retry()
		if ok != tc.ok || (ok && d != time.Duration(tc.ms)*time.Millisecond) {
			t.Errorf("retry %q: %v %v", tc.value, d, ok)
		}
	}
}

func TestIDPastItsBoundIsIgnored(t *testing.T) {
	t.Parallel()
	opts := Options{MaxLine: 2 * MaxIDBytes, MaxEvent: 16}
	if _, r, _ := read("id: "+strings.Repeat("i", MaxIDBytes)+"\n\n", opts); len(r.LastEventID()) != MaxIDBytes {
		t.Fatalf("an ID at the bound was dropped")
	}
	if _, r, _ := read("id: 1\n\nid: "+strings.Repeat("i", MaxIDBytes+1)+"\n\n", opts); r.LastEventID() != "1" {
		t.Fatalf("an ID past the bound was kept: %d bytes", len(r.LastEventID()))
	}
}

// A line ending in CR is returned at once: an event completed by "\r\r" is
// delivered without waiting for a byte that may never come.
func TestCRCompletesAnEventWithoutWaiting(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	r := NewReader(pr, small)
	go pw.Write([]byte("data: a\r\r"))
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "a" {
		t.Fatalf("%q %v", ev.Data, err)
	}
	go pw.Write([]byte("\ndata: b\r\n\r\n"))
	ev, err = r.Next()
	if err != nil || string(ev.Data) != "b" {
		t.Fatalf("%q %v", ev.Data, err)
	}
	pw.Close()
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end %v", err)
	}
}

// Resume continues after a reconnection: the last complete event's ID and
// the reconnection time carry over, the cut event does not, and the new
// stream may start with its own byte order mark.
func TestResumeKeepsTheLastCompleteEventID(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("retry: 7\nid: 1\ndata: a\n\nid: 2\ndata: cut"), small)
	if got, err := drain(r); !errors.Is(err, ErrUnterminated) || !slices.Equal(got, []string{"|a"}) {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrUnterminated) {
		t.Fatalf("the error is not sticky: %v", err)
	}
	if r.LastEventID() != "1" {
		t.Fatalf("last ID %q", r.LastEventID())
	}
	r.Resume(strings.NewReader("\xef\xbb\xbfdata: b\n\n"))
	if got, err := drain(r); err != io.EOF || !slices.Equal(got, []string{"|b"}) {
		t.Fatalf("%q %v", got, err)
	}
	if d, ok := r.Retry(); !ok || d != 7*time.Millisecond || r.LastEventID() != "1" || r.Events() != 2 {
		t.Fatalf("after resume: retry %v %v, last ID %q, events %d", d, ok, r.LastEventID(), r.Events())
	}
}

func TestReadErrorIsReturned(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), small)
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("%q %v", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("%v", err)
	}
}
