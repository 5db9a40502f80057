// Package sse reads Server-Sent Events, the text/event-stream format of the
// WHATWG HTML standard (§9.2.5 "Parsing an event stream" and §9.2.6
// "Interpreting an event stream"), with bounded memory. It is the one
// reader the A2A client, the MCP Streamable HTTP transport and the model
// providers share, so a stream means the same thing to all three.
//
// What it reads, as the standard says:
//
//   - Lines end in CRLF, LF or CR; one leading byte order mark (U+FEFF in
//     UTF-8) is dropped at the start of each stream.
//   - A line starting with ":" is a comment (a keep-alive) and is skipped.
//   - "data" lines are joined with "\n"; "event" names the event's type;
//     "id" sets the last event ID, which counts once the event is complete
//     (an ID holding NUL, or longer than [MaxIDBytes], is ignored); "retry"
//     of ASCII digits only sets the reconnection time; other fields are
//     ignored. One space after the colon is dropped.
//   - A blank line completes an event. An event with no data line is not
//     returned (its ID still counts, which is how a server primes a client
//     to resume).
//
// The rule for a stream that ends inside an event: the incomplete event is
// never returned. The standard discards it ("if the file ends in the middle
// of an event, before the final empty line, the incomplete event is not
// dispatched"), and so does this reader, but it also says so: where a
// browser silently reconnects, each caller here has an answer it was
// waiting for, so [Reader.Next] returns [ErrUnterminated] instead of
// io.EOF whenever the stream ends after a field line (data, event, id,
// retry or any other) that no blank line followed, or inside a line. A
// stream that ends at an event boundary, even after comments or blank
// lines, returns io.EOF. So a provider stream whose last event lacks its
// blank line fails as a cut stream, an MCP stream resumes from the last
// complete event's ID (the standard's reconnection) or leaves the outcome
// unknown, and an A2A stream is lost: the event is delivered by none of
// them. ErrUnterminated matches io.ErrUnexpectedEOF with errors.Is.
//
// Bounds are checked as bytes arrive, before memory grows: one line
// ([Options.MaxLine], its ending not counted), one event's type and joined
// data ([Options.MaxEvent]) and, optionally, the number of events
// ([Options.MaxEvents]). Past one, Next returns a [*BoundError], which
// matches [ErrBound]. Errors are sticky: once Next fails, it fails the same
// way until [Reader.Resume].
package sse
