package children

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/ceiling"
)

// Action is one of the subagent tool's actions.
type Action string

// The actions.
const (
	ActionSpawn       Action = "spawn"
	ActionSpawnRemote Action = "spawn_remote"
	ActionInspect     Action = "inspect"
	ActionWait        Action = "wait"
	ActionStop        Action = "stop"
)

// Delegates reports whether the action hands work to another agent: spawn
// starts a local child, spawn_remote a remote one. inspect, wait and stop
// act only on the caller's own children and delegate nothing, so an
// approval of the subagent tool (an approval of delegation) never asks
// before them (docs/approvals.md).
func (a Action) Delegates() bool { return a == ActionSpawn || a == ActionSpawnRemote }

// Arguments are a subagent call's arguments, parsed: the action and the
// fields it takes.
type Arguments struct {
	Action  Action
	Request Request       // spawn
	Remote  RemoteRequest // spawn_remote
	AgentID string        // inspect, stop
	Wait    WaitRequest   // wait
}

// maxArgumentBytes bounds the arguments a parse reads: the largest input
// and its context, with room for the rest.
const maxArgumentBytes = 8 << 20

// ParseArguments parses a subagent call's arguments strictly: one JSON
// object, no duplicate key, no field the schema lacks or the action does
// not take, every type and bound of REFERENCE §4.5. remotes are the
// configured remote names; without any, spawn_remote is an unknown
// action. A refusal is an [*Error] whose code is the tool's recoverable
// error code. Bounds that need the supervisor's state (capacity, known
// agents, handoffs) are the supervisor's.
func ParseArguments(raw []byte, remotes []string) (Arguments, error) {
	if len(raw) > maxArgumentBytes {
		return Arguments{}, errorf(CodeOutOfRange, "", "the arguments hold %d bytes, over %d", len(raw), maxArgumentBytes)
	}
	// encoding/json would replace invalid UTF-8 silently: refuse it.
	if !utf8.Valid(raw) {
		return Arguments{}, errorf(CodeInvalidJSON, "", "the arguments are not valid UTF-8")
	}
	top, err := object("", raw)
	if err != nil {
		return Arguments{}, err
	}
	var a Arguments
	act, ok := top["action"]
	if !ok {
		return Arguments{}, errorf(CodeMissingField, "action", "action is required")
	}
	s, err := str("action", act)
	if err != nil {
		return Arguments{}, err
	}
	a.Action = Action(s)
	takes := map[Action][]string{
		ActionSpawn:   {"action", "request"},
		ActionInspect: {"action", "agent_id"},
		ActionStop:    {"action", "agent_id"},
		ActionWait:    {"action", "agent_ids", "mode", "timeout_ms"},
	}
	if len(remotes) > 0 {
		takes[ActionSpawnRemote] = []string{"action", "remote_request"}
	}
	fields, ok := takes[a.Action]
	if !ok {
		return Arguments{}, errorf(CodeUnknownAction, "action", "action %q is not offered: use one of %s", shorten(s), offered(takes))
	}
	known := []string{"action", "request", "remote_request", "agent_id", "agent_ids", "mode", "timeout_ms"}
	if len(remotes) == 0 {
		known = slices.DeleteFunc(known, func(k string) bool { return k == "remote_request" })
	}
	for k := range top {
		if !slices.Contains(known, k) {
			return Arguments{}, errorf(CodeUnknownField, k, "the subagent tool has no field %q", shorten(k))
		}
		if !slices.Contains(fields, k) {
			return Arguments{}, errorf(CodeUnknownField, k, "%s is not a field of action %s", k, a.Action)
		}
	}
	for _, k := range fields {
		if _, ok := top[k]; !ok {
			return Arguments{}, errorf(CodeMissingField, k, "action %s needs %s", a.Action, k)
		}
	}
	switch a.Action {
	case ActionSpawn:
		a.Request, err = parseRequest(top["request"])
	case ActionSpawnRemote:
		a.Remote, err = parseRemote(top["remote_request"], remotes)
	case ActionInspect, ActionStop:
		a.AgentID, err = uuidField("agent_id", top["agent_id"])
	case ActionWait:
		a.Wait, err = parseWait(top)
	}
	if err != nil {
		return Arguments{}, err
	}
	return a, nil
}

func offered(takes map[Action][]string) string {
	var names []string
	for a := range takes {
		names = append(names, string(a))
	}
	slices.Sort(names)
	b, _ := json.Marshal(names)
	return string(b)
}

func parseRequest(raw json.RawMessage) (Request, error) {
	const at = "request"
	obj, err := object(at, raw)
	if err != nil {
		return Request{}, err
	}
	if err := only(at, obj, "input", "overlay", "context", "handoffs", "capabilities", "ceilings", "output_schema"); err != nil {
		return Request{}, err
	}
	var r Request
	in, ok := obj["input"]
	if !ok {
		return Request{}, errorf(CodeMissingField, at+"/input", "request.input is required")
	}
	if r.Input, err = str(at+"/input", in); err != nil {
		return Request{}, err
	}
	if n := len(r.Input); n < 1 || n > MaxInputBytes {
		return Request{}, errorf(CodeOutOfRange, at+"/input", "the input holds 1..%d bytes, got %d", MaxInputBytes, n)
	}
	if v, ok := obj["overlay"]; ok && !isNull(v) {
		if r.Overlay, err = str(at+"/overlay", v); err != nil {
			return Request{}, err
		}
	}
	if v, ok := obj["context"]; ok {
		if r.Context, err = stringList(at+"/context", v, false); err != nil {
			return Request{}, err
		}
	}
	if v, ok := obj["handoffs"]; ok {
		items, err := array(at+"/handoffs", v)
		if err != nil {
			return Request{}, err
		}
		if len(items) > MaxHandoffs {
			return Request{}, errorf(CodeOutOfRange, at+"/handoffs", "at most %d handoffs, got %d", MaxHandoffs, len(items))
		}
		for i, it := range items {
			h, err := parseHandoff(at+"/handoffs/"+strconv.Itoa(i), it)
			if err != nil {
				return Request{}, err
			}
			r.Handoffs = append(r.Handoffs, h)
		}
	}
	if v, ok := obj["capabilities"]; ok {
		if r.Capabilities, err = parseCapabilities(at+"/capabilities", v); err != nil {
			return Request{}, err
		}
	}
	if v, ok := obj["ceilings"]; ok {
		if r.Ceilings, err = parseCeilings(at+"/ceilings", v); err != nil {
			return Request{}, err
		}
	}
	if v, ok := obj["output_schema"]; ok && !isNull(v) {
		r.OutputSchema = append(json.RawMessage{}, v...)
	}
	return r, nil
}

func parseHandoff(at string, raw json.RawMessage) (Handoff, error) {
	obj, err := object(at, raw)
	if err != nil {
		return Handoff{}, err
	}
	if err := only(at, obj, "source_agent_id", "result_id", "kind"); err != nil {
		return Handoff{}, err
	}
	var h Handoff
	for _, k := range []string{"source_agent_id", "result_id", "kind"} {
		if _, ok := obj[k]; !ok {
			return Handoff{}, errorf(CodeMissingField, at+"/"+k, "a handoff needs %s", k)
		}
	}
	if h.SourceAgentID, err = uuidField(at+"/source_agent_id", obj["source_agent_id"]); err != nil {
		return Handoff{}, err
	}
	if h.ResultID, err = uuidField(at+"/result_id", obj["result_id"]); err != nil {
		return Handoff{}, err
	}
	kind, err := str(at+"/kind", obj["kind"])
	if err != nil {
		return Handoff{}, err
	}
	if h.Kind = HandoffKind(kind); h.Kind != HandoffInline && h.Kind != HandoffArtifact {
		return Handoff{}, errorf(CodeOutOfRange, at+"/kind", "kind is inline or artifact, got %q", shorten(kind))
	}
	return h, nil
}

func parseCapabilities(at string, raw json.RawMessage) (Capabilities, error) {
	obj, err := object(at, raw)
	if err != nil {
		return Capabilities{}, err
	}
	if err := only(at, obj, "tools", "skills", "mcp_servers", "model_route", "memory"); err != nil {
		return Capabilities{}, err
	}
	var c Capabilities
	if v, ok := obj["memory"]; ok && !isNull(v) {
		if c.Memory, err = parseMemoryScope(at+"/memory", v); err != nil {
			return Capabilities{}, err
		}
	}
	for k, dst := range map[string]*[]string{"tools": &c.Tools, "skills": &c.Skills, "mcp_servers": &c.MCPServers, "model_route": &c.ModelRoute} {
		v, ok := obj[k]
		if !ok || isNull(v) {
			continue
		}
		if *dst, err = stringList(at+"/"+k, v, true); err != nil {
			return Capabilities{}, err
		}
	}
	return c, nil
}

func parseCeilings(at string, raw json.RawMessage) (Ceilings, error) {
	obj, err := object(at, raw)
	if err != nil {
		return Ceilings{}, err
	}
	var c Ceilings
	names := []string{}
	for _, f := range c.fields() {
		names = append(names, f.name)
	}
	if err := only(at, obj, names...); err != nil {
		return Ceilings{}, err
	}
	for _, f := range c.fields() {
		v, ok := obj[f.name]
		if !ok || isNull(v) {
			continue
		}
		var n uint64
		if f.name == "max_total_tokens" || f.name == "max_cost_microusd" {
			s, err := str(at+"/"+f.name, v)
			if err != nil {
				return Ceilings{}, err
			}
			var ok bool
			if n, ok = ceiling.ParseCanonicalUint(s); !ok {
				return Ceilings{}, errorf(CodeOutOfRange, at+"/"+f.name, "%s is a canonical decimal string 0..18446744073709551615, got %q", f.name, shorten(s))
			}
		} else if n, err = integer(at+"/"+f.name, v, ^uint64(0)); err != nil {
			return Ceilings{}, err
		}
		*f.limit = ledger.Max(n)
	}
	return c, nil
}

func parseRemote(raw json.RawMessage, remotes []string) (RemoteRequest, error) {
	const at = "remote_request"
	obj, err := object(at, raw)
	if err != nil {
		return RemoteRequest{}, err
	}
	if err := only(at, obj, "remote", "parts", "accepted_output_modes", "stream", "max_duration_ms"); err != nil {
		return RemoteRequest{}, err
	}
	for _, k := range []string{"remote", "parts", "accepted_output_modes"} {
		if _, ok := obj[k]; !ok {
			return RemoteRequest{}, errorf(CodeMissingField, at+"/"+k, "remote_request needs %s", k)
		}
	}
	var r RemoteRequest
	if r.Remote, err = str(at+"/remote", obj["remote"]); err != nil {
		return RemoteRequest{}, err
	}
	items, err := array(at+"/parts", obj["parts"])
	if err != nil {
		return RemoteRequest{}, err
	}
	for i, it := range items {
		p, err := parsePart(at+"/parts/"+strconv.Itoa(i), it)
		if err != nil {
			return RemoteRequest{}, err
		}
		r.Parts = append(r.Parts, p)
	}
	if r.AcceptedOutputModes, err = stringList(at+"/accepted_output_modes", obj["accepted_output_modes"], false); err != nil {
		return RemoteRequest{}, err
	}
	if v, ok := obj["stream"]; ok && !isNull(v) {
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return RemoteRequest{}, errorf(CodeWrongType, at+"/stream", "stream is a boolean or null")
		}
		r.Stream = &b
	}
	if v, ok := obj["max_duration_ms"]; ok && !isNull(v) {
		n, err := integer(at+"/max_duration_ms", v, ^uint64(0))
		if err != nil {
			return RemoteRequest{}, err
		}
		r.MaxDurationMillis = ledger.Max(n)
	}
	if err := checkRemote(r, remotes); err != nil {
		return RemoteRequest{}, err
	}
	return r, nil
}

func parsePart(at string, raw json.RawMessage) (Part, error) {
	obj, err := object(at, raw)
	if err != nil {
		return Part{}, err
	}
	if err := only(at, obj, "text", "data", "raw", "url", "mediaType", "filename"); err != nil {
		return Part{}, err
	}
	var p Part
	if v, ok := obj["text"]; ok {
		s, err := str(at+"/text", v)
		if err != nil {
			return Part{}, err
		}
		p.Text = &s
	}
	if v, ok := obj["data"]; ok {
		p.Data = append(json.RawMessage{}, v...)
	}
	if v, ok := obj["raw"]; ok {
		s, err := str(at+"/raw", v)
		if err != nil {
			return Part{}, err
		}
		if p.Raw, err = base64.StdEncoding.Strict().DecodeString(s); err != nil {
			return Part{}, errorf(CodeWrongType, at+"/raw", "raw is standard base64")
		}
		if p.Raw == nil {
			p.Raw = []byte{}
		}
	}
	if v, ok := obj["url"]; ok {
		if p.URL, err = str(at+"/url", v); err != nil {
			return Part{}, err
		}
		if p.URL == "" {
			return Part{}, errorf(CodeOutOfRange, at+"/url", "url is not empty")
		}
	}
	for k, dst := range map[string]*string{"mediaType": &p.MediaType, "filename": &p.Filename} {
		if v, ok := obj[k]; ok {
			if *dst, err = str(at+"/"+k, v); err != nil {
				return Part{}, err
			}
		}
	}
	return p, nil
}

func parseWait(top map[string]json.RawMessage) (WaitRequest, error) {
	items, err := array("agent_ids", top["agent_ids"])
	if err != nil {
		return WaitRequest{}, err
	}
	var w WaitRequest
	if n := len(items); n < 1 || n > MaxWaitHandles {
		return WaitRequest{}, errorf(CodeOutOfRange, "agent_ids", "name 1..%d children, got %d", MaxWaitHandles, n)
	}
	for i, it := range items {
		id, err := uuidField("agent_ids/"+strconv.Itoa(i), it)
		if err != nil {
			return WaitRequest{}, err
		}
		if slices.Contains(w.AgentIDs, id) {
			return WaitRequest{}, errorf(CodeDuplicateAgentID, "agent_ids/"+strconv.Itoa(i), "agent %s is named twice", id)
		}
		w.AgentIDs = append(w.AgentIDs, id)
	}
	mode, err := str("mode", top["mode"])
	if err != nil {
		return WaitRequest{}, err
	}
	if w.Mode = WaitMode(mode); w.Mode != WaitAny && w.Mode != WaitAll {
		return WaitRequest{}, errorf(CodeOutOfRange, "mode", "mode is any or all, got %q", shorten(mode))
	}
	ms, err := integer("timeout_ms", top["timeout_ms"], uint64(MaxWaitTimeout/time.Millisecond))
	if err != nil {
		return WaitRequest{}, err
	}
	w.Timeout = time.Duration(ms) * time.Millisecond
	return w, nil
}

// object decodes one JSON object into its members, refusing a duplicate
// key and anything after the object.
func object(at string, raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, errorf(CodeInvalidJSON, at, "not JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, wrongType(at, "an object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errorf(CodeInvalidJSON, at, "not a JSON object")
		}
		key := tok.(string)
		if _, dup := out[key]; dup {
			return nil, errorf(CodeInvalidJSON, join(at, key), "key %q appears twice", shorten(key))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errorf(CodeInvalidJSON, join(at, key), "not JSON")
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, errorf(CodeInvalidJSON, at, "not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(CodeInvalidJSON, at, "text after the object")
	}
	return out, nil
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "/" + key
}

// only refuses a member not in names.
func only(at string, obj map[string]json.RawMessage, names ...string) error {
	for k := range obj {
		if !slices.Contains(names, k) {
			return errorf(CodeUnknownField, join(at, k), "%s has no field %q", at, shorten(k))
		}
	}
	return nil
}

func array(at string, raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errorf(CodeWrongType, at, "%s is an array", at)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errorf(CodeInvalidJSON, at, "not a JSON array")
	}
	return items, nil
}

func str(at string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", errorf(CodeWrongType, at, "%s is a string", at)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errorf(CodeInvalidJSON, at, "not a JSON string")
	}
	if !utf8.ValidString(s) {
		return "", errorf(CodeOutOfRange, at, "%s is not valid UTF-8", at)
	}
	return s, nil
}

// stringList decodes an array of strings; names (capability names) are
// 1..256 bytes each.
func stringList(at string, raw json.RawMessage, names bool) ([]string, error) {
	items, err := array(at, raw)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, err := str(at+"/"+strconv.Itoa(i), it)
		if err != nil {
			return nil, err
		}
		if names && (s == "" || len(s) > 256) {
			return nil, errorf(CodeOutOfRange, at+"/"+strconv.Itoa(i), "a name holds 1..256 bytes")
		}
		out = append(out, s)
	}
	return out, nil
}

// integer decodes a non-negative JSON integer written without fraction or
// exponent, at most max.
func integer(at string, raw json.RawMessage, max uint64) (uint64, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, errorf(CodeWrongType, at, "%s is an integer", at)
	}
	if s[0] == '-' {
		return 0, errorf(CodeOutOfRange, at, "%s is at least 0", at)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errorf(CodeWrongType, at, "%s is an integer, written without fraction or exponent", at)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > max || (len(s) > 1 && s[0] == '0') {
		return 0, errorf(CodeOutOfRange, at, "%s is 0..%d", at, max)
	}
	return n, nil
}

func uuidField(at string, raw json.RawMessage) (string, error) {
	s, err := str(at, raw)
	if err != nil {
		return "", err
	}
	if !isUUID(s) {
		return "", errorf(CodeOutOfRange, at, "%s is a UUID in lowercase canonical form (as a snapshot gives it)", at)
	}
	return s, nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func wrongType(at, want string) error {
	field := at
	if field == "" {
		field = "arguments"
	}
	return errorf(CodeWrongType, at, "%s is %s", field, want)
}
