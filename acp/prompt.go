package acp

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/mcp"
)

// MaxPromptBytes bounds a prompt's text with its links' references: the
// reference's 1 MiB input less 4 KiB kept for instructions.
const MaxPromptBytes = 1020 << 10

// The bounds of one resource link's textual reference, per field.
const (
	maxLinkName        = 256
	maxLinkURI         = 2048
	maxLinkTitle       = 256
	maxLinkDescription = 1024
	maxLinkMimeType    = 128
)

// promptText joins a prompt's blocks into the task's input: text as it
// is, each resource link as a bounded textual reference that is never
// fetched. Image, audio and embedded resources are refused: the agent
// does not advertise them.
func promptText(blocks []sdk.ContentBlock) (string, *sdk.RequestError) {
	if len(blocks) == 0 {
		return "", invalidParams("prompt is empty: send at least one text block")
	}
	var b strings.Builder
	for i, blk := range blocks {
		at := "prompt[" + strconv.Itoa(i) + "]"
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case blk.Text != nil:
			b.WriteString(blk.Text.Text)
		case blk.ResourceLink != nil:
			l := blk.ResourceLink
			b.WriteString("[resource link: ")
			b.WriteString(strconv.Quote(textx.Cut(l.Name, maxLinkName)))
			b.WriteString(" <")
			b.WriteString(textx.Cut(l.Uri, maxLinkURI))
			b.WriteString(">")
			if l.Title != nil {
				b.WriteString(" title ")
				b.WriteString(strconv.Quote(textx.Cut(*l.Title, maxLinkTitle)))
			}
			if l.Description != nil {
				b.WriteString(" description ")
				b.WriteString(strconv.Quote(textx.Cut(*l.Description, maxLinkDescription)))
			}
			if l.MimeType != nil {
				b.WriteString(" type ")
				b.WriteString(textx.Cut(*l.MimeType, maxLinkMimeType))
			}
			if l.Size != nil {
				b.WriteString(" size ")
				b.WriteString(strconv.Itoa(*l.Size))
			}
			b.WriteString(" (not fetched)]")
		case blk.Image != nil:
			return "", invalidParams(at + ": image content is not supported: send text and resource links")
		case blk.Audio != nil:
			return "", invalidParams(at + ": audio content is not supported: send text and resource links")
		case blk.Resource != nil:
			return "", invalidParams(at + ": embedded resources are not supported: send a resource link instead")
		default:
			return "", invalidParams(at + ": unknown content block")
		}
		if b.Len() > MaxPromptBytes {
			return "", invalidParams("the prompt is over " + strconv.Itoa(MaxPromptBytes) + " bytes with its links")
		}
	}
	return b.String(), nil
}

// promptRun is one running prompt: the task, its forwarder, and the
// approval channel bound to it.
type promptRun struct {
	c    *conn
	st   *session
	cwd  string          // the session's working directory, as the client sent it
	id   json.RawMessage // the session/prompt request's ID
	task *pablo.Task
	ext  extensions

	// cancelled is set by session/cancel and $/cancel_request: the answer
	// is then cancelled, whatever the task's outcome.
	cancelled atomic.Bool

	mu        sync.Mutex
	announced map[string]chan struct{} // tool_call sent, by call ID
	forwarded chan struct{}            // closed when the forwarder stops sending
}

// stop cancels the task. A client's cancel also marks the answer
// cancelled, and does so while it holds the connection's lock, in the same
// critical section where it found the prompt running: the prompt clears
// itself from its session under that lock before it reads the mark, so a
// cancel that found the prompt running is always seen by its answer.
func (r *promptRun) stop() {
	if r.task != nil {
		r.task.Cancel()
	}
}

func (r *promptRun) announce(callID string) {
	r.mu.Lock()
	ch := r.announced[callID]
	if ch == nil {
		ch = make(chan struct{})
		r.announced[callID] = ch
	}
	select {
	case <-ch:
	default:
		close(ch)
	}
	r.mu.Unlock()
}

func (r *promptRun) announcement(callID string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.announced[callID]
	if ch == nil {
		ch = make(chan struct{})
		r.announced[callID] = ch
	}
	return ch
}

// The permission options the agent offers: ACP's four kinds, the
// "always" ones meaning "for the rest of this task".
const (
	optionAllowOnce    = "allow_once"
	optionAllowAlways  = "allow_always"
	optionRejectOnce   = "reject_once"
	optionRejectAlways = "reject_always"
)

// answerOf maps a selected permission option to the approver's answer;
// anything else rejects.
func answerOf(optionID sdk.PermissionOptionId) approval.Answer {
	switch optionID {
	case optionAllowOnce:
		return approval.AllowOnce
	case optionAllowAlways:
		return approval.AllowForTask
	case optionRejectAlways:
		return approval.RejectForTask
	}
	return approval.Reject
}

// Approve sends session/request_permission for the call, after its
// tool_call update (the same toolCallId), and waits for the answer:
// allow_once and reject_once answer this call, allow_always and
// reject_always the rest of the task's calls of the same shape too. A
// cancelled outcome, an unknown option or the end of ctx rejects; an
// error answer or a lost client is an approver that could not answer.
// With pablo/v2 the request's _meta carries what the answer is bound to:
// the request ID, the agent, the capability, the arguments digest and the
// effect, and on a subagent call what it delegates.
func (r *promptRun) Approve(ctx context.Context, req approval.Request) (approval.Answer, error) {
	select {
	case <-r.announcement(req.CallID):
	case <-r.forwarded:
		return approval.Reject, nil
	case <-ctx.Done():
		// No one answered: the task ended first.
		return approval.Reject, ctx.Err()
	}
	title := string(req.Tool)
	params := sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(r.st.id),
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(req.CallID), Title: &title,
			Kind: sdk.Ptr(toolKind(title)), Status: sdk.Ptr(sdk.ToolCallStatusPending)},
		Options: []sdk.PermissionOption{
			{Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow once", OptionId: optionAllowOnce},
			{Kind: sdk.PermissionOptionKindAllowAlways, Name: "Allow for this task", OptionId: optionAllowAlways},
			{Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: optionRejectOnce},
			{Kind: sdk.PermissionOptionKindRejectAlways, Name: "Reject for this task", OptionId: optionRejectAlways},
		},
	}
	if len(req.Arguments) > 0 {
		params.ToolCall.RawInput = req.Arguments
	}
	if r.ext.v2 {
		params.Meta = map[string]any{ExtV2: approvalMeta(req)}
	}
	m, err := r.c.call(ctx, r.st.id, sdk.ClientMethodSessionRequestPermission, params)
	if err != nil {
		return approval.Reject, err
	}
	if m.Error != nil {
		return approval.Reject, errors.New("acp: the client answered session/request_permission with an error")
	}
	var resp sdk.RequestPermissionResponse
	if json.Unmarshal(m.Result, &resp) != nil || resp.Outcome.Selected == nil {
		return approval.Reject, nil
	}
	return answerOf(resp.Outcome.Selected.OptionId), nil
}

// ApprovalChannel implements pablo.ApprovalChannel: answers come over ACP.
func (r *promptRun) ApprovalChannel() string { return "acp" }

// approvalMeta is the pablo/v2 metadata of a session/request_permission:
// the request as the approval.requested event names it. The masked
// arguments are the tool call's rawInput already; the resources, which
// are not masked on the request, stay out.
func approvalMeta(req approval.Request) map[string]any {
	a := map[string]any{"request_id": req.ID, "agent_id": req.AgentID,
		"capability": string(req.Tool), "arguments_digest": req.ArgumentsDigest, "effect": string(req.Effect)}
	if d := req.Delegation; d != nil {
		a["delegation"] = delegationMeta(d)
	}
	return map[string]any{"approval": a}
}

// delegationMeta is what a subagent call delegates, as the
// approval.requested event's delegation names it: the action, the remote
// or the child's narrowed capabilities, the handoffs by reference, and
// the digest and size of what is handed over, never its content.
func delegationMeta(d *approval.Delegation) map[string]any {
	m := map[string]any{"action": string(d.Action), "input_digest": d.InputDigest, "input_bytes": d.InputBytes}
	if d.Action == children.ActionSpawnRemote {
		m["remote"] = d.Remote
		return m
	}
	list := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	c := d.Capabilities
	m["capabilities"] = map[string]any{"tools": list(c.Tools), "skills": list(c.Skills),
		"mcp_servers": list(c.MCPServers), "model_route": list(c.ModelRoute)}
	if len(d.Handoffs) > 0 {
		hs := make([]map[string]any, len(d.Handoffs))
		for i, h := range d.Handoffs {
			hs[i] = map[string]any{"source_agent_id": h.SourceAgentID, "result_id": h.ResultID, "kind": string(h.Kind)}
		}
		m["handoffs"] = hs
	}
	return m
}

// readBuffer asks the client for a workspace file as its editor holds it
// (fs/read_text_file), after fs.read's own checks passed. Any failure
// reads the disk instead.
func (r *promptRun) readBuffer(ctx context.Context, rel string) (string, bool) {
	if r.cwd == "" {
		return "", false
	}
	m, err := r.c.callFree(ctx, r.st.id, sdk.ClientMethodFsReadTextFile,
		sdk.ReadTextFileRequest{SessionId: sdk.SessionId(r.st.id), Path: filepath.Join(r.cwd, rel)}, true)
	if err != nil || m.Error != nil {
		return "", false
	}
	var resp sdk.ReadTextFileResponse
	if json.Unmarshal(m.Result, &resp) != nil {
		return "", false
	}
	return resp.Content, true
}

// call sends a request to the client and waits for its answer or ctx.
func (c *conn) call(ctx context.Context, sessionID, method string, params any) (*message, error) {
	return c.callFree(ctx, sessionID, method, params, false)
}

// callFree is call; with free its answer is not counted against the
// session's messages.
func (c *conn) callFree(ctx context.Context, sessionID, method string, params any, free bool) (*message, error) {
	enc, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nextCall++
	id := strconv.FormatInt(c.nextCall, 10)
	cl := &call{session: sessionID, answer: make(chan *message, 1), free: free}
	c.calls[id] = cl
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}()
	b := make([]byte, 0, len(enc)+96)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, method)
	b = append(b, `,"params":`...)
	b = append(b, enc...)
	b = append(b, "}\n"...)
	if err := c.emit(b); err != nil {
		return nil, err
	}
	select {
	case m := <-cl.answer:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.work.Done():
		return nil, c.work.Err()
	}
}

// prompt starts a session's prompt: it is admitted here, in the reader,
// so a cancel read next finds it; its updates and answer are the
// forwarder's.
func (c *conn) prompt(m *message) error {
	var req sdk.PromptRequest
	e := decode(m.Params, &req)
	st, err := c.lookup(string(req.SessionId))
	if err != nil {
		return err
	}
	if e != nil {
		return c.replyError(m.ID, e)
	}
	if st == nil {
		if req.SessionId == "" {
			return c.replyError(m.ID, invalidParams("sessionId is required"))
		}
		return c.replyError(m.ID, invalidParams("no session "+strconv.Quote(cut(string(req.SessionId), 128))+" on this connection: call session/new first"))
	}
	text, e := promptText(req.Prompt)
	if e != nil {
		return c.replyError(m.ID, e)
	}
	c.mu.Lock()
	busy := st.run != nil
	ext, cwd, readText := c.ext, st.cwd, c.readText
	c.mu.Unlock()
	if busy {
		return c.replyError(m.ID, invalidParams("the session is running a prompt: wait for its answer or cancel it"))
	}
	ctx := c.work
	if ext.v2 {
		var e *sdk.RequestError
		if ctx, e = traceContext(ctx, req.Meta); e != nil {
			return c.replyError(m.ID, e)
		}
	}
	run := &promptRun{c: c, st: st, cwd: cwd, id: append(json.RawMessage(nil), m.ID...), ext: ext,
		announced: map[string]chan struct{}{}, forwarded: make(chan struct{})}
	if readText {
		// Workspace reads see the editor's buffers (unsaved changes).
		ctx = pablo.WithEditorBuffers(ctx, run.readBuffer)
	}
	if ext.authorize {
		// An OAuth MCP server's authorization URL goes to the client.
		ctx = mcp.WithAuthorizationOpener(ctx, run.openAuthorization)
	}
	task, err := st.s.Prompt(ctx, text, run)
	if err != nil {
		return c.replyError(m.ID, sessionError(err))
	}
	run.task = task
	c.mu.Lock()
	st.run = run
	c.mu.Unlock()
	c.prompts.Add(1)
	go run.forward()
	return nil
}

// traceContext puts the prompt's incoming W3C trace context
// (_meta["pablo/v2"].traceparent and tracestate) on ctx.
func traceContext(ctx context.Context, meta map[string]any) (context.Context, *sdk.RequestError) {
	v2, _ := meta[ExtV2].(map[string]any)
	if v2 == nil {
		return ctx, nil
	}
	parent, ok := v2["traceparent"].(string)
	if !ok {
		if _, present := v2["traceparent"]; present {
			return ctx, invalidParams(`_meta["pablo/v2"].traceparent must be a string`)
		}
		return ctx, nil
	}
	state, _ := v2["tracestate"].(string)
	sc, err := pablo.ParseTraceContext(parent, state)
	if err != nil {
		return ctx, invalidParams(`_meta["pablo/v2"]: ` + err.Error())
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc), nil
}

// forward projects the task's events as they come, then answers the
// prompt once the task has settled and every update is written.
func (r *promptRun) forward() {
	c := r.c
	defer c.prompts.Done()
	events := make(chan event.Event, c.opts.Queue)
	stop := make(chan struct{})
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		defer close(events)
		for ev, err := range r.task.Events() {
			if err != nil {
				return
			}
			select {
			case events <- ev:
			case <-stop:
				return
			}
		}
	}()

	p := newProjector(r.st.id, r.ext, c.opts.Deployment, c.opts.CoalesceBytes)
	p.maxRaw, p.cwd = c.opts.MaxLine-rawMargin, r.cwd
	var werr error
	emit := func(frame []byte) error {
		if werr == nil {
			werr = c.emit(frame)
		}
		return werr
	}
	// The window timer sends its generation; a stale one is ignored.
	fire := make(chan uint64, 1)
	var timer Timer
	var gen uint64
	disarm := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
	}
	var last event.Event
	for done := false; !done; {
		select {
		case ev, ok := <-events:
			if !ok {
				done = true
				break
			}
			last = ev
			_ = p.event(&ev, emit)
			if ev.Type == event.ToolStarted && ev.Call != nil {
				r.announce(ev.Call.ID)
			}
			switch {
			case !p.pending:
				disarm()
			case timer == nil:
				gen++
				g := gen
				timer = c.opts.Clock.AfterFunc(c.opts.CoalesceWindow, func() {
					select {
					case fire <- g:
					default:
					}
				})
			}
		case g := <-fire:
			if g == gen && timer != nil {
				timer = nil
				_ = p.flush(emit)
			}
		}
	}
	disarm()
	_ = p.flush(emit)
	close(r.forwarded)
	close(stop)
	<-pulled
	obj := r.task.Wait()

	c.mu.Lock()
	if r.st.run == r {
		r.st.run = nil
	}
	c.mu.Unlock()
	if werr != nil {
		return
	}
	reason, rpcErr := stopReason(obj, r.cancelled.Load())
	var meta []byte
	if r.ext.v2 {
		meta = terminal(p, &last, obj, r.ext)
	}
	if rpcErr != nil {
		if meta != nil {
			rpcErr.Data = map[string]any{ExtV2: json.RawMessage(meta)}
		}
		_ = c.replyError(r.id, rpcErr)
		return
	}
	resp := sdk.PromptResponse{StopReason: reason}
	if meta != nil {
		resp.Meta = map[string]any{ExtV2: json.RawMessage(meta)}
	}
	_ = c.reply(r.id, resp)
}

// stopReason maps a settled task to the prompt's answer (REFERENCE §3.3):
// completed → end_turn, cancelled → cancelled, policy_denied → refusal,
// the output_tokens limit → max_tokens, the model and tool call limits →
// max_turn_requests; timeouts, other limits, failures and tasks never
// admitted are -32603. A prompt the client cancelled is cancelled whatever
// the task's outcome.
func stopReason(obj *pablo.TaskObject, cancelled bool) (sdk.StopReason, *sdk.RequestError) {
	if cancelled {
		return sdk.StopReasonCancelled, nil
	}
	if obj == nil || obj.Outcome == nil {
		code := "setup_failed"
		if obj != nil && obj.Error != nil {
			code = obj.Error.Code
		}
		return "", &sdk.RequestError{Code: -32603, Message: "the task was not admitted: " + code}
	}
	o := obj.Outcome
	switch o.Status {
	case outcome.Completed:
		return sdk.StopReasonEndTurn, nil
	case outcome.Cancelled:
		return sdk.StopReasonCancelled, nil
	case outcome.PolicyDenied:
		return sdk.StopReasonRefusal, nil
	case outcome.LimitExceeded:
		switch o.Limit {
		case outcome.LimitOutputTokens:
			return sdk.StopReasonMaxTokens, nil
		case outcome.LimitModelCalls, outcome.LimitToolCalls:
			return sdk.StopReasonMaxTurnRequests, nil
		}
		return "", &sdk.RequestError{Code: -32603, Message: "the task exceeded its " + string(o.Limit) + " limit"}
	case outcome.TimedOut:
		return "", &sdk.RequestError{Code: -32603, Message: "the task timed out"}
	}
	msg := "the task failed"
	if o.Code != "" {
		msg += ": " + string(o.Code)
	}
	return "", &sdk.RequestError{Code: -32603, Message: msg}
}

// terminal is the pablo/v2 terminal metadata: the correlation of the
// task's last event and its outcome, or its whole task object with
// pablo/task-v2 (output_validation and output_repair only with their
// extensions). A task never admitted has no event: its metadata names no
// run.
func terminal(p *projector, last *event.Event, obj *pablo.TaskObject, ext extensions) []byte {
	var b []byte
	if last.RunID != "" {
		b = p.correlation(nil, last, last)
		b = b[:len(b)-1]
	} else {
		b = append(b, `{"schema_version":`...)
		b = appendJSONString(b, event.SchemaVersion)
	}
	if ext.task {
		t := *obj
		if !ext.output {
			t.OutputValidation = nil
		}
		if !ext.repair {
			t.OutputRepair = nil
		}
		enc, _ := json.Marshal(&t)
		b = append(b, `,"task":`...)
		b = append(b, enc...)
	} else if obj.Outcome != nil {
		enc, _ := json.Marshal(obj.Outcome)
		b = append(b, `,"outcome":`...)
		b = append(b, enc...)
	} else if obj.Error != nil {
		enc, _ := json.Marshal(obj.Error)
		b = append(b, `,"error":`...)
		b = append(b, enc...)
	}
	return append(b, '}')
}
