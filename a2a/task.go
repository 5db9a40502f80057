package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"unicode"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/pabloagent/pablo/children"
)

// ErrOutputLimit is a remote result whose logical bytes pass the parent's
// output ceiling; the child ends limit_exceeded (output_bytes).
var ErrOutputLimit = errors.New("a2a: the remote result exceeds the output ceiling")

// MaxUsageClaims bounds the usage claims kept of one remote task.
const MaxUsageClaims = 16

// The usage claims' key and value patterns, matched by hand (usageKey,
// decimalRE); pattern_test.go checks each against its expression.
const (
	usageKeyPattern = `^[a-z][a-z0-9_]{0,63}$`
	decimalPattern  = `^(0|[1-9][0-9]{0,38})$`
)

// tracker folds one remote task's answers: it binds the remote IDs once,
// follows the state, keeps the one artifact within the output ceiling and
// the usage claims. It is owned by one goroutine.
type tracker struct {
	remote     string
	method     string
	max        int64
	contextID  string
	taskID     string
	state      sdk.TaskState
	artifactID string
	parts      []*sdk.Part
	bytes      int64
	usage      map[string]string
	// message is a direct Message answer (no task).
	message bool
	// onBound is called once, when the task ID is bound.
	onBound func()
}

func (t *tracker) protocol(format string, args ...any) error {
	return &ProtocolError{Remote: t.remote, Method: t.method, Detail: fmt.Sprintf(format, args...)}
}

// checkID admits an opaque remote ID: 1..256 bytes, valid UTF-8, no control
// characters.
func checkID(what, id string) error {
	if id == "" || len(id) > MaxRemoteIDBytes {
		return fmt.Errorf("the %s ID must be 1..%d bytes", what, MaxRemoteIDBytes)
	}
	for _, r := range id {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
			return fmt.Errorf("the %s ID has a control character or invalid UTF-8", what)
		}
	}
	return nil
}

// bind binds the context ID once and the task ID once; a change is
// refused. Task events carry both; a message may carry neither.
func (t *tracker) bind(contextID string, taskID sdk.TaskID) error {
	for _, id := range []struct {
		what  string
		got   string
		bound *string
	}{{"context", contextID, &t.contextID}, {"task", string(taskID), &t.taskID}} {
		if err := checkID(id.what, id.got); err != nil {
			return t.protocol("%s", err)
		}
		switch {
		case *id.bound == "":
			*id.bound = id.got
			if id.what == "task" && t.onBound != nil {
				t.onBound()
			}
		case *id.bound != id.got:
			return t.protocol("the remote changed the %s ID it bound", id.what)
		}
	}
	return nil
}

// apply folds one event in.
func (t *tracker) apply(ev sdk.Event) error {
	switch e := ev.(type) {
	case *sdk.Task:
		if err := t.bind(e.ContextID, e.ID); err != nil {
			return err
		}
		if err := t.setState(e.Status.State); err != nil {
			return err
		}
		for _, a := range e.Artifacts {
			if err := t.artifact(a, false); err != nil {
				return err
			}
		}
		t.claims(e.Metadata)
	case *sdk.TaskStatusUpdateEvent:
		if err := t.bind(e.ContextID, e.TaskID); err != nil {
			return err
		}
		if err := t.setState(e.Status.State); err != nil {
			return err
		}
		t.claims(e.Metadata)
	case *sdk.TaskArtifactUpdateEvent:
		if err := t.bind(e.ContextID, e.TaskID); err != nil {
			return err
		}
		if err := t.artifact(e.Artifact, e.Append); err != nil {
			return err
		}
	case *sdk.Message:
		if t.taskID != "" {
			return t.protocol("a message arrived for a bound task; only task updates are admitted")
		}
		if e.ContextID != "" {
			if err := checkID("context", e.ContextID); err != nil {
				return t.protocol("%s", err)
			}
			t.contextID = e.ContextID
		}
		if err := checkID("message", e.ID); err != nil {
			return t.protocol("%s", err)
		}
		if err := t.addParts(e.Parts); err != nil {
			return err
		}
		t.message = true
		t.state = sdk.TaskStateCompleted
	default:
		return t.protocol("an event of no admitted kind")
	}
	return nil
}

// setState follows the task state; a settled task never changes again.
func (t *tracker) setState(s sdk.TaskState) error {
	switch s {
	case sdk.TaskStateSubmitted, sdk.TaskStateWorking, sdk.TaskStateCompleted, sdk.TaskStateFailed,
		sdk.TaskStateRejected, sdk.TaskStateCanceled, sdk.TaskStateInputRequired, sdk.TaskStateAuthRequired:
	default:
		return t.protocol("the task state is not one of A2A 1.0's")
	}
	if settled(t.state) && s != t.state {
		return t.protocol("the task left a settled state")
	}
	t.state = s
	return nil
}

// settled reports a terminal state or an interruption: the end of what
// Pablo reads of a task.
func settled(s sdk.TaskState) bool {
	return s.Terminal() || s == sdk.TaskStateInputRequired || s == sdk.TaskStateAuthRequired
}

// artifact keeps the task's one artifact: a second artifact ID is refused,
// chunks of the same one append (or replace, without append).
func (t *tracker) artifact(a *sdk.Artifact, appendParts bool) error {
	if a == nil {
		return t.protocol("an artifact update without an artifact")
	}
	if err := checkID("artifact", string(a.ID)); err != nil {
		return t.protocol("%s", err)
	}
	switch {
	case t.artifactID == "":
		t.artifactID = string(a.ID)
	case t.artifactID != string(a.ID):
		return t.protocol("a second artifact; a remote task returns one")
	case !appendParts:
		t.parts, t.bytes = nil, 0
	}
	return t.addParts(a.Parts)
}

func (t *tracker) addParts(parts []*sdk.Part) error {
	for _, p := range parts {
		if p == nil || p.Content == nil {
			return t.protocol("a part with no content")
		}
		n, err := partBytes(p)
		if err != nil {
			return t.protocol("%s", err)
		}
		if t.bytes+n > t.max {
			return ErrOutputLimit
		}
		t.bytes += n
		t.parts = append(t.parts, p)
	}
	return nil
}

// partBytes is a part's logical bytes: the text, the data's JSON, the
// inline file's bytes or the URL.
func partBytes(p *sdk.Part) (int64, error) {
	if len(p.MediaType) > MaxMediaType || len(p.Filename) > MaxFilename {
		return 0, fmt.Errorf("a part's mediaType or filename is past its bound")
	}
	switch c := p.Content.(type) {
	case sdk.Text:
		return int64(len(c)), nil
	case sdk.Raw:
		return int64(len(c)), nil
	case sdk.URL:
		if len(c) > MaxURLBytes {
			return 0, fmt.Errorf("a url part has more than %d bytes", MaxURLBytes)
		}
		return int64(len(c)), nil
	case sdk.Data:
		b, err := json.Marshal(c.Value)
		if err != nil {
			return 0, fmt.Errorf("a data part does not encode")
		}
		return int64(len(b)), nil
	}
	return 0, fmt.Errorf("a part of no admitted kind")
}

// claims keeps metadata.usage's entries as decimal-string claims.
func (t *tracker) claims(meta map[string]any) {
	u, ok := meta["usage"].(map[string]any)
	if !ok {
		return
	}
	keys := make([]string, 0, len(u))
	for k := range u {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !usageKey(k) {
			continue
		}
		var s string
		switch v := u[k].(type) {
		case string:
			s = v
		case float64:
			if v < 0 || v != math.Trunc(v) || v > 1<<53 {
				continue
			}
			s = fmt.Sprintf("%.0f", v)
		default:
			continue
		}
		if !decimalRE(s) {
			continue
		}
		if t.usage == nil {
			t.usage = make(map[string]string)
		}
		if _, ok := t.usage[k]; !ok && len(t.usage) >= MaxUsageClaims {
			continue
		}
		t.usage[k] = s
	}
}

// resultParts converts the kept parts to the one part type a remote
// request and result share: exactly one of Text, Data, Raw (an inline file,
// base64 in JSON) and URL (inert: never fetched); Filename is the peer's
// label, never a local path.
func resultParts(parts []*sdk.Part) []children.Part {
	out := make([]children.Part, 0, len(parts))
	for _, p := range parts {
		rp := children.Part{MediaType: p.MediaType, Filename: p.Filename}
		switch c := p.Content.(type) {
		case sdk.Text:
			s := string(c)
			rp.Text = &s
		case sdk.Raw:
			rp.Raw = []byte(c)
		case sdk.URL:
			rp.URL = string(c)
		case sdk.Data:
			rp.Data, _ = json.Marshal(c.Value)
		}
		out = append(out, rp)
	}
	return out
}

// render is what the parent reads of a result: the text when every part
// is text, else the parts as JSON; and the structured output when the
// result is exactly one data part.
func render(parts []children.Part) (string, json.RawMessage) {
	allText := true
	text := ""
	for _, p := range parts {
		if p.Text == nil {
			allText = false
			break
		}
		text += *p.Text
	}
	var structured json.RawMessage
	if len(parts) == 1 && parts[0].Data != nil {
		structured = parts[0].Data
	}
	if allText {
		return text, structured
	}
	b, _ := json.Marshal(struct {
		Parts []children.Part `json:"parts"`
	}{parts})
	return string(b), structured
}

// usageKey reports whether s matches usageKeyPattern, matched by hand as
// remoteName is.
func usageKey(s string) bool {
	if len(s) == 0 || len(s) > 64 || !('a' <= s[0] && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// decimalRE reports whether s matches decimalPattern.
func decimalRE(s string) bool {
	if s == "0" {
		return true
	}
	if len(s) == 0 || len(s) > 39 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
