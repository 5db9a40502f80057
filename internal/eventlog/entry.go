package eventlog

import "github.com/pabloagent/pablo/event"

// Stamp is what the ledger gave an event: its numbers and its time. A zero
// RootSeq means the ledger appended nothing.
type Stamp struct {
	RootSeq, Seq uint64
	UnixMicros   int64
}

// Header is what every event of one agent shares.
type Header struct {
	RunID, SessionID, TraceID string
	Agent                     event.AgentRef
}

// Entry is an event on its way from the run loop to the log and the sink:
// what every event of an agent shares sits behind Header, and a text delta
// (the bulk of any task) has its Text and no Data.
type Entry struct {
	Stamp
	Header *Header
	Text   string           // a text delta's text
	Data   *event.EventData // every other kind; nil for a text delta
}

// Event expands the entry.
func (en *Entry) Event() event.Event {
	e := event.Event{SchemaVersion: event.SchemaVersion, Seq: en.Seq, RootSeq: en.RootSeq, TimestampUnixMicros: en.UnixMicros,
		RunID: en.Header.RunID, SessionID: en.Header.SessionID, TraceID: en.Header.TraceID, Agent: en.Header.Agent}
	if en.Data != nil {
		e.EventData = *en.Data
	} else {
		e.EventData = event.EventData{Type: event.TextDelta, Text: en.Text}
	}
	return e
}
