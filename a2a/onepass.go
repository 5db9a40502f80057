package a2a

import (
	"bytes"
	"encoding/json"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// decodeOnePass decodes data, one JSON-RPC answer to a 1.0 call with
// request ID id (a send's result or a stream frame), by hand in one pass:
// the envelope, the result and the event's fields, straight into the
// event the tracker folds, with no reflection and no decoder per part.
// It admits only what it is sure of: a well-formed answer with the call's
// ID, a result wrapping exactly one event, keys spelled exactly as A2A
// 1.0 spells them, each at most once, and no null where a value is
// expected. Anything else (a malformed answer, an error, a key that
// encoding/json would match by its case-insensitive rule, an escaped key)
// reports false, and the caller decodes the answer the general way, whose
// rules and errors stay the only ones. What it admits is what the
// general way gives, field for field (FuzzOnePassDecode checks it).
func decodeOnePass(data []byte, id string, stream bool) (sdk.Event, bool) {
	s := scanner{b: data}
	var ev sdk.Event
	var version, gotID string
	n := 0
	s.object(envelopeKeys, func(k int) {
		switch k {
		case 0:
			version = s.str()
		case 1:
			gotID = s.str()
		case 2:
			ev, n = s.result()
		case 3:
			s.null()
		}
	})
	s.ws()
	if s.bad || s.i != len(s.b) || version != "2.0" || gotID != id || n != 1 {
		return nil, false
	}
	switch ev.(type) {
	case *sdk.Task, *sdk.Message:
	default:
		if !stream {
			return nil, false
		}
	}
	return ev, true
}

// The keys of each object, as A2A 1.0's JSON spells them (a2a-go's field
// tags). A key of an object that is none of them but matches one
// case-insensitively ends the one pass.
var (
	envelopeKeys = []string{"jsonrpc", "id", "result", "error"}
	resultKeys   = []string{"task", "message", "statusUpdate", "artifactUpdate"}
	taskKeys     = []string{"id", "artifacts", "contextId", "history", "metadata", "status"}
	statusKeys   = []string{"message", "state", "timestamp"}
	messageKeys  = []string{"messageId", "contextId", "extensions", "metadata", "parts", "referenceTaskIds", "role", "taskId"}
	artifactKeys = []string{"artifactId", "description", "extensions", "metadata", "name", "parts"}
	statusUpKeys = []string{"contextId", "status", "taskId", "metadata"}
	artUpKeys    = []string{"append", "artifact", "contextId", "lastChunk", "taskId", "metadata"}
	partKeys     = []string{"text", "raw", "data", "url", "filename", "mediaType", "metadata"}
)

// scanner reads one JSON document. The first thing it is not sure of sets
// bad and moves it to the end, so every loop ends and every value read
// after is zero.
type scanner struct {
	b   []byte
	i   int
	bad bool
}

func (s *scanner) fail() {
	s.bad = true
	s.i = len(s.b)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next returns the next byte after whitespace, 0 at the end.
func (s *scanner) next() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) {
	if s.next() != c {
		s.fail()
		return
	}
	s.i++
}

// object reads an object whose known keys are keys: field(k) reads the
// value of keys[k]; any other key's value is checked and skipped. A key
// repeated, escaped, not ASCII, or matching a known key by case only
// fails.
func (s *scanner) object(keys []string, field func(k int)) {
	s.expect('{')
	if s.next() == '}' {
		s.i++
		return
	}
	var seen uint32
	for !s.bad {
		key := s.key()
		s.expect(':')
		k := -1
		for j, name := range keys {
			if string(key) == name {
				k = j
				break
			}
			if equalFoldASCII(key, name) {
				s.fail()
				return
			}
		}
		switch {
		case s.bad:
			return
		case k < 0:
			s.skip()
		case seen&(1<<k) != 0:
			s.fail()
			return
		default:
			seen |= 1 << k
			field(k)
		}
		switch s.next() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.fail()
		}
	}
}

// equalFoldASCII reports whether key, ASCII, equals name but for case.
func equalFoldASCII(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		a, b := key[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// key reads an object key: printable ASCII with no escape.
func (s *scanner) key() []byte {
	s.expect('"')
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.i++
			return s.b[start : s.i-1]
		}
		if c < 0x20 || c >= 0x80 || c == '\\' {
			break
		}
		s.i++
	}
	s.fail()
	return nil
}

// array reads an array, elem reading each element; [] is an empty,
// non-nil slice to the caller, as encoding/json makes it.
func (s *scanner) array(elem func()) {
	s.expect('[')
	if s.next() == ']' {
		s.i++
		return
	}
	for !s.bad {
		elem()
		switch s.next() {
		case ',':
			s.i++
		case ']':
			s.i++
			return
		default:
			s.fail()
		}
	}
}

// str reads a string. One of printable ASCII with no escape is taken as
// it is; any other is unquoted by encoding/json itself, so an escape, a
// control character and invalid UTF-8 read exactly as the general way
// reads them.
func (s *scanner) str() string {
	s.expect('"')
	if s.bad {
		return ""
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.i++
			return string(s.b[start : s.i-1])
		}
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return s.slowStr(start - 1)
		}
		s.i++
	}
	s.fail()
	return ""
}

func (s *scanner) slowStr(open int) string {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '\\':
			s.i += 2
		case c == '"':
			s.i++
			var v string
			if json.Unmarshal(s.b[open:s.i], &v) != nil {
				s.fail()
			}
			return v
		default:
			s.i++
		}
	}
	s.fail()
	return ""
}

func (s *scanner) strs() []string {
	out := []string{}
	s.array(func() { out = append(out, s.str()) })
	return out
}

func (s *scanner) boolean() bool {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false
	}
	s.fail()
	return false
}

func (s *scanner) null() {
	s.ws()
	if !bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.fail()
		return
	}
	s.i += 4
}

// value returns the next value's bytes, checked as JSON by encoding/json;
// null fails (the general way reads null as no value, which the one pass
// leaves to it).
func (s *scanner) value() []byte {
	if s.next() == 'n' {
		s.fail()
		return nil
	}
	from, depth := s.i, 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			for s.i++; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
				if s.b[s.i] == '\\' {
					s.i++
				}
			}
			s.i++
			if depth == 0 {
				return s.checked(from)
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return s.checked(from)
			}
			if depth--; depth == 0 {
				s.i++
				return s.checked(from)
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return s.checked(from)
			}
		}
		s.i++
	}
	return s.checked(from)
}

func (s *scanner) checked(from int) []byte {
	if s.i > len(s.b) || from >= s.i || !json.Valid(s.b[from:s.i]) {
		s.fail()
		return nil
	}
	return s.b[from:s.i]
}

// skip checks and skips a value of a key no A2A 1.0 type has.
func (s *scanner) skip() { s.value() }

// metadata reads a metadata object as encoding/json reads map[string]any.
func (s *scanner) metadata() map[string]any {
	raw := s.value()
	var m map[string]any
	if s.bad || json.Unmarshal(raw, &m) != nil {
		s.fail()
		return nil
	}
	return m
}

// result reads a result: the one event it wraps and how many it wraps.
func (s *scanner) result() (sdk.Event, int) {
	var ev sdk.Event
	n := 0
	s.object(resultKeys, func(k int) {
		n++
		switch k {
		case 0:
			ev = s.task()
		case 1:
			ev = s.message()
		case 2:
			ev = s.statusUpdate()
		case 3:
			ev = s.artifactUpdate()
		}
	})
	return ev, n
}

func (s *scanner) task() *sdk.Task {
	t := &sdk.Task{}
	s.object(taskKeys, func(k int) {
		switch k {
		case 0:
			t.ID = sdk.TaskID(s.str())
		case 1:
			t.Artifacts = []*sdk.Artifact{}
			s.array(func() { t.Artifacts = append(t.Artifacts, s.artifact()) })
		case 2:
			t.ContextID = s.str()
		case 3:
			t.History = []*sdk.Message{}
			s.array(func() { t.History = append(t.History, s.message()) })
		case 4:
			t.Metadata = s.metadata()
		case 5:
			t.Status = s.status()
		}
	})
	return t
}

func (s *scanner) status() sdk.TaskStatus {
	var st sdk.TaskStatus
	s.object(statusKeys, func(k int) {
		switch k {
		case 0:
			st.Message = s.message()
		case 1:
			if st.State = sdk.TaskState(s.str()); st.State == "TASK_STATE_UNSPECIFIED" {
				st.State = sdk.TaskStateUnspecified
			}
		case 2:
			raw := s.value()
			var ts time.Time
			if s.bad || ts.UnmarshalJSON(raw) != nil {
				s.fail()
				return
			}
			st.Timestamp = &ts
		}
	})
	return st
}

func (s *scanner) message() *sdk.Message {
	m := &sdk.Message{}
	s.object(messageKeys, func(k int) {
		switch k {
		case 0:
			m.ID = s.str()
		case 1:
			m.ContextID = s.str()
		case 2:
			m.Extensions = s.strs()
		case 3:
			m.Metadata = s.metadata()
		case 4:
			m.Parts = s.parts()
		case 5:
			m.ReferenceTasks = []sdk.TaskID{}
			s.array(func() { m.ReferenceTasks = append(m.ReferenceTasks, sdk.TaskID(s.str())) })
		case 6:
			if m.Role = sdk.MessageRole(s.str()); m.Role == "ROLE_UNSPECIFIED" {
				m.Role = sdk.MessageRoleUnspecified
			}
		case 7:
			m.TaskID = sdk.TaskID(s.str())
		}
	})
	return m
}

func (s *scanner) artifact() *sdk.Artifact {
	a := &sdk.Artifact{}
	s.object(artifactKeys, func(k int) {
		switch k {
		case 0:
			a.ID = sdk.ArtifactID(s.str())
		case 1:
			a.Description = s.str()
		case 2:
			a.Extensions = s.strs()
		case 3:
			a.Metadata = s.metadata()
		case 4:
			a.Name = s.str()
		case 5:
			a.Parts = s.parts()
		}
	})
	return a
}

func (s *scanner) statusUpdate() *sdk.TaskStatusUpdateEvent {
	e := &sdk.TaskStatusUpdateEvent{}
	s.object(statusUpKeys, func(k int) {
		switch k {
		case 0:
			e.ContextID = s.str()
		case 1:
			e.Status = s.status()
		case 2:
			e.TaskID = sdk.TaskID(s.str())
		case 3:
			e.Metadata = s.metadata()
		}
	})
	return e
}

func (s *scanner) artifactUpdate() *sdk.TaskArtifactUpdateEvent {
	e := &sdk.TaskArtifactUpdateEvent{}
	s.object(artUpKeys, func(k int) {
		switch k {
		case 0:
			e.Append = s.boolean()
		case 1:
			e.Artifact = s.artifact()
		case 2:
			e.ContextID = s.str()
		case 3:
			e.LastChunk = s.boolean()
		case 4:
			e.TaskID = sdk.TaskID(s.str())
		case 5:
			e.Metadata = s.metadata()
		}
	})
	return e
}

func (s *scanner) parts() sdk.ContentParts {
	out := sdk.ContentParts{}
	s.array(func() { out = append(out, s.part()) })
	return out
}

// part reads a part as a2a-go's Part reads itself: exactly one of text,
// raw (base64), data and a non-empty url.
func (s *scanner) part() *sdk.Part {
	p := &sdk.Part{}
	n := 0
	s.object(partKeys, func(k int) {
		switch k {
		case 0:
			p.Content, n = sdk.Text(s.str()), n+1
		case 1:
			raw := s.value()
			var b sdk.Raw
			if s.bad || json.Unmarshal(raw, &b) != nil {
				s.fail()
				return
			}
			p.Content, n = b, n+1
		case 2:
			raw := s.value()
			var v any
			if s.bad || json.Unmarshal(raw, &v) != nil {
				s.fail()
				return
			}
			p.Content, n = sdk.Data{Value: v}, n+1
		case 3:
			if u := s.str(); u != "" {
				p.Content, n = sdk.URL(u), n+1
			}
		case 4:
			p.Filename = s.str()
		case 5:
			p.MediaType = s.str()
		case 6:
			p.Metadata = s.metadata()
		}
	})
	if n != 1 {
		s.fail()
	}
	return p
}
