package redact

// Stream masks one stream of text delivered in chunks (a tool's stdout, a
// model call's text deltas): a secret split across chunks is masked whole.
// It holds back only a tail that could still be the start of a secret: a
// prefix of a known value, or a pattern's prefix followed by bytes that
// could continue its match (at most the longest value or MaxPatternBytes);
// a chunk that cannot start one is released at once, unchanged and
// without copying. Flush releases the rest when the stream ends.
//
// Masking a text in chunks gives the text Mask gives for it whole. A
// Stream is not safe for concurrent use.
type Stream struct {
	set  *Set
	pend []byte // held back, not yet released
	work []byte
	prev int // the last byte released, or -1
}

// NewStream returns a Stream masking with s.
func (s *Set) NewStream() *Stream {
	st := &Stream{}
	st.Reset(s)
	return st
}

// Reset makes st a new stream masking with s, keeping its buffers.
func (st *Stream) Reset(s *Set) {
	st.set, st.pend, st.prev = s, st.pend[:0], -1
}

// Pending reports how many bytes are held back.
func (st *Stream) Pending() int { return len(st.pend) }

// WriteString takes the next chunk and returns the text it releases, masked,
// with the number of masked regions in it.
func (st *Stream) WriteString(chunk string) (string, int) {
	t := st.set.table()
	if len(st.pend) == 0 {
		r := scan(t, chunk, 0, st.prev, true)
		if len(r.values) == 0 && r.present == nil && len(t.loose) == 0 {
			st.pend = append(st.pend[:0], chunk[r.hold:]...)
			if r.hold > 0 {
				st.prev = int(chunk[r.hold-1])
			}
			return chunk[:r.hold], 0
		}
	}
	st.work = st.begin()
	st.work = append(st.work, chunk...)
	return st.release(t, false)
}

// Write is WriteString for bytes.
func (st *Stream) Write(chunk []byte) (string, int) {
	t := st.set.table()
	if len(st.pend) == 0 {
		r := scan(t, chunk, 0, st.prev, true)
		if len(r.values) == 0 && r.present == nil && len(t.loose) == 0 {
			out := string(chunk[:r.hold])
			st.keep(chunk[r.hold:])
			if r.hold > 0 {
				st.prev = int(chunk[r.hold-1])
			}
			return out, 0
		}
	}
	st.work = st.begin()
	st.work = append(st.work, chunk...)
	return st.release(t, false)
}

// Flush ends the stream: it returns everything held back, masked, and
// resets st for a new stream with the same Set.
func (st *Stream) Flush() (string, int) {
	if len(st.pend) == 0 {
		st.prev = -1
		return "", 0
	}
	st.work = st.begin()
	out, n := st.release(st.set.table(), true)
	st.pend, st.prev = st.pend[:0], -1
	return out, n
}

// Cut ends a stream cut short, whose rest will never be written: what is
// held back could be the start of a secret whose end was cut off, so it is
// released as one Mask (counted as one masked region). It resets st like
// Flush.
func (st *Stream) Cut() (string, int) {
	held := len(st.pend)
	st.pend, st.prev = st.pend[:0], -1
	if held == 0 {
		return "", 0
	}
	return Mask, 1
}

// MaskCut masks a text that was cut short (a capture bound dropped its
// rest): every secret in it, and its tail that could still be the start of
// one, whose end was dropped. It returns the number of masked regions.
func (s *Set) MaskCut(text string) (string, int) {
	st := s.NewStream()
	out, n := st.WriteString(text)
	tail, m := st.Cut()
	if n+m == 0 {
		return text, 0
	}
	return out + tail, n + m
}

// MaskWindow returns whole[from:to], a page of a larger text, with every
// secret of whole that overlaps the page masked, the part of it on the page
// included: a secret the page's edges cut is masked by what lies beyond
// them. It returns the number of masked regions.
func (s *Set) MaskWindow(whole []byte, from, to int) (string, int) {
	t := s.table()
	reach := MaxPatternBytes
	for _, v := range t.values {
		reach = max(reach, len(v))
	}
	lo, hi := max(0, from-reach), min(len(whole), to+reach)
	win := whole[lo:hi]
	page := whole[from:to]
	r := scan(t, win, 0, -1, false)
	if !r.any(t) {
		return string(page), 0
	}
	var keep []span
	for _, sp := range t.matches(win, 0, r, nil) {
		ms, me := max(sp.s+lo, from), min(sp.e+lo, to)
		if ms < me {
			keep = append(keep, span{ms - from, me - from, ms - from, me - from})
		}
	}
	if len(keep) == 0 {
		return string(page), 0
	}
	out, n := apply(nil, page, keep)
	return string(out), n
}

func (st *Stream) keep(tail []byte) {
	st.pend = append(st.pend[:0], tail...)
}

// begin starts the work buffer: the context byte, then what is held back.
func (st *Stream) begin() []byte {
	w := st.work[:0]
	if st.prev >= 0 {
		w = append(w, byte(st.prev))
	}
	return append(w, st.pend...)
}

// release masks the work buffer and releases all of it (at the end of the
// stream) or up to the first byte that could still start a secret.
func (st *Stream) release(t *table, final bool) (string, int) {
	b := st.work
	from := 0
	if st.prev >= 0 {
		from = 1
	}
	r := scan(t, b, from, -1, !final)
	hold := len(b)
	if !final {
		hold = r.hold
	}
	var spans []span
	if r.any(t) {
		spans = t.matches(b, from, r, nil)
	}
	// A match is never cut: one that crosses the hold is held whole.
	for moved := true; moved; {
		moved = false
		for _, sp := range spans {
			if sp.ms < hold && sp.me > hold {
				hold, moved = sp.ms, true
			}
		}
	}
	keep := spans[:0]
	for _, sp := range spans {
		if sp.me <= hold {
			keep = append(keep, span{sp.s - from, sp.e - from, sp.ms - from, sp.me - from})
		}
	}
	var out string
	n := 0
	if hold > from {
		if len(keep) == 0 {
			out = string(b[from:hold])
		} else {
			var masked []byte
			masked, n = apply(nil, b[from:hold], keep)
			out = string(masked)
		}
		st.prev = int(b[hold-1])
	}
	st.keep(b[hold:])
	return out, n
}
