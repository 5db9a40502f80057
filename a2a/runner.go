package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// The causes a remote task's context ends with.
var (
	errCancelled = errors.New("a2a: the remote child was cancelled")
	errDeadline  = errors.New("a2a: the remote child's deadline passed")
)

// Runner runs remote children over A2A: the children package's
// RemoteRunner. Each StartRemote fetches and admits the remote's card,
// sends the request's explicit parts (nothing else: no instructions,
// transcript, tools or credentials), follows the task and validates what
// comes back locally.
type Runner struct {
	c *Client

	mu       sync.Mutex
	admitted map[string]admittedCard // by remote name; see card
}

// admittedCard is the last card a remote's child admitted and the bytes
// it was admitted from.
type admittedCard struct {
	data []byte
	card *Card
}

var _ children.RemoteRunner = (*Runner)(nil)

// NewRunner validates opts and returns a Runner over them.
func NewRunner(opts Options) (*Runner, error) {
	c, err := NewClient(opts)
	if err != nil {
		return nil, err
	}
	return &Runner{c: c}, nil
}

// Remotes returns the configured remote names: the enum of
// spawn_remote's remote.
func (r *Runner) Remotes() []string { return r.c.Remotes() }

// Client returns the runner's client.
func (r *Runner) Client() *Client { return r.c }

// Report is what Pablo keeps of one remote task apart from its
// children.Result: the card's digest, the remote IDs as the peer bound
// them (opaque; never local identities), the last remote state, the usage
// the peer claimed (decimal strings, never local accounting) and the
// cancel exchange. Every field is a peer claim except Sent and CancelSent.
type Report struct {
	Remote     string `json:"remote"`
	CardDigest string `json:"card_digest,omitempty"`
	ContextID  string `json:"context_id,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	// State is the remote's last task state (its A2A 1.0 name).
	State string `json:"state,omitempty"`
	// Sent reports that the request left the process.
	Sent bool `json:"sent"`
	// CancelSent reports the one CancelTask sent; CancelReceipt is the
	// state the peer answered with, a claim and never proof of rollback.
	CancelSent    bool              `json:"cancel_sent"`
	CancelReceipt string            `json:"cancel_receipt,omitempty"`
	UsageClaims   map[string]string `json:"usage_claims,omitempty"`
	// Parts are the result's parts as kept (text, data, inline files,
	// inert URLs).
	Parts []children.Part `json:"parts,omitempty"`
}

// Handle is one started remote child: a children.Handle with its
// [Report].
type Handle struct {
	// bound is closed once the remote bound its task, whose IDs are then
	// taskID and contextID.
	bound             chan struct{}
	taskID, contextID string
	done              chan struct{}
	cancel            context.CancelCauseFunc
	result            children.Result
	report            Report
}

var _ children.Handle = (*Handle)(nil)

// Done is closed once the remote child settled and its goroutine and
// connections are joined.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Result is the terminal result, valid after Done.
func (h *Handle) Result() children.Result { return h.result }

// Report is the remote task's report, valid after Done.
func (h *Handle) Report() Report { return h.report }

// Bound is closed once the remote bound its task: from then on a cancel
// sends the task's one CancelTask.
func (h *Handle) Bound() <-chan struct{} { return h.bound }

// RemoteTask returns the IDs the remote bound its task under (opaque peer
// values), valid once Bound is closed: what a resume follows the task by
// (children.RemoteSpec's TaskID and ContextID).
func (h *Handle) RemoteTask() (taskID, contextID string) {
	select {
	case <-h.bound:
		return h.taskID, h.contextID
	default:
		return "", ""
	}
}

// Cancel asks the remote child to stop: one CancelTask when the remote
// bound a task, nothing sent at all when nothing was sent yet.
func (h *Handle) Cancel() { h.cancel(errCancelled) }

// StartRemote checks spec and starts the remote child. A child whose ctx
// is already done settles cancelled with nothing sent, not even the card
// request. A spec with a TaskID (a resume's) sends nothing either: the
// task the remote bound before is followed with GetTask until it
// settles.
func (r *Runner) StartRemote(ctx context.Context, spec children.RemoteSpec) (children.Handle, error) {
	remote, ok := r.c.Remote(spec.Remote)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a configured remote", ErrUnknownRemote, spec.Remote)
	}
	var msg *sdk.Message
	if spec.TaskID == "" {
		var err error
		if msg, err = r.message(spec.RemoteRequest); err != nil {
			return nil, err
		}
	} else if err := checkID("task", spec.TaskID); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	h := &Handle{bound: make(chan struct{}), done: make(chan struct{}), cancel: cancel, report: Report{Remote: remote.Name}}
	go func() {
		defer close(h.done)
		defer cancel(context.Canceled)
		growStack(0)
		h.result = r.run(ctx, remote, spec, msg, &h.report, func(taskID, contextID string) {
			h.taskID, h.contextID = taskID, contextID
			close(h.bound)
		})
	}()
	return h, nil
}

// message builds the one message sent: the explicit parts, the user
// role, and nothing else; run gives it a fresh message ID.
func (r *Runner) message(req children.RemoteRequest) (*sdk.Message, error) {
	if len(req.Parts) == 0 || len(req.Parts) > MaxParts {
		return nil, fmt.Errorf("%w: parts must hold 1..%d parts, got %d", ErrRequest, MaxParts, len(req.Parts))
	}
	if len(req.AcceptedOutputModes) == 0 || len(req.AcceptedOutputModes) > MaxOutputModes {
		return nil, fmt.Errorf("%w: accepted_output_modes must hold 1..%d modes", ErrRequest, MaxOutputModes)
	}
	for i, m := range req.AcceptedOutputModes {
		if m == "" || len(m) > MaxMediaType {
			return nil, fmt.Errorf("%w: accepted_output_modes[%d] must be 1..%d bytes", ErrRequest, i, MaxMediaType)
		}
	}
	parts := make([]*sdk.Part, 0, len(req.Parts))
	for i, p := range req.Parts {
		kinds := 0
		var part sdk.Part
		if p.Text != nil {
			kinds++
			part.Content = sdk.Text(*p.Text)
		}
		if len(p.Data) > 0 {
			kinds++
			var v any
			if err := json.Unmarshal(p.Data, &v); err != nil {
				return nil, fmt.Errorf("%w: parts[%d].data is not JSON", ErrRequest, i)
			}
			part.Content = sdk.Data{Value: v}
		}
		if p.Raw != nil {
			kinds++
			part.Content = sdk.Raw(p.Raw)
		}
		if p.URL != "" {
			kinds++
			if len(p.URL) > MaxURLBytes {
				return nil, fmt.Errorf("%w: parts[%d].url has more than %d bytes", ErrRequest, i, MaxURLBytes)
			}
			part.Content = sdk.URL(p.URL)
		}
		if kinds != 1 {
			return nil, fmt.Errorf("%w: parts[%d] must hold exactly one of text, data, raw and url", ErrRequest, i)
		}
		if len(p.MediaType) > MaxMediaType || len(p.Filename) > MaxFilename {
			return nil, fmt.Errorf("%w: parts[%d]: mediaType is at most %d bytes, filename at most %d", ErrRequest, i, MaxMediaType, MaxFilename)
		}
		part.MediaType, part.Filename = p.MediaType, p.Filename
		parts = append(parts, &part)
	}
	// The message's ID is drawn by the child's goroutine, with the
	// request's (see run).
	return &sdk.Message{Role: sdk.MessageRoleUser, Parts: parts}, nil
}

// run is one remote child, from the card to its settlement.
func (r *Runner) run(ctx context.Context, remote Remote, spec children.RemoteSpec, msg *sdk.Message, rep *Report, onBound func(taskID, contextID string)) children.Result {
	clock := r.c.opts.clock()
	if n, ok := spec.MaxDurationMillis.Value(); ok {
		d := time.Duration(min(n, uint64(1<<62)/uint64(time.Millisecond))) * time.Millisecond
		var stop func()
		ctx, stop = timerContext(ctx, clock, d, errDeadline)
		defer stop()
	}
	if ctx.Err() != nil {
		// A queued or already stopped child: nothing is sent, not even
		// the card request.
		return ended(ctx, outcome.NotSent)
	}
	card, err := r.card(ctx, remote)
	if ctx.Err() != nil {
		// Stopped before the request left: nothing is sent.
		return ended(ctx, outcome.NotSent)
	}
	if err != nil {
		return failed(outcome.NotSent, err.Error())
	}
	rep.CardDigest = card.Digest
	if spec.TaskID != "" {
		return r.follow(ctx, remote, card, spec, rep, onBound)
	}
	stream := card.Streaming
	if spec.Stream != nil {
		stream = *spec.Stream && card.Streaming
	}
	sctx, bind, stopSend := sendContext(ctx, clock)
	defer stopSend()
	t := &tracker{remote: remote.Name, max: r.c.opts.maxOutput()}
	t.onBound = func() { bind(); onBound(t.taskID, t.contextID) }
	params := sendParams{Message: msg}
	params.Configuration.AcceptedOutputModes = spec.AcceptedOutputModes
	// A blocking send returns with the task's first state, so its ID is
	// known early: a stop from then on cancels it, and the task is
	// polled with GetTask until it settles.
	params.Configuration.ReturnImmediately = !stream
	// Both IDs at once, on the child's goroutine whose stack is grown:
	// one read of the system's randomness, where the syscall runs deep.
	var reqID string
	msg.ID, reqID = r.c.opts.newIDs()
	call := rpcCall{remote: remote, card: card, params: params, stream: stream, id: reqID}
	m := methodsOf(card)
	if stream {
		call.method = m.stream
	} else {
		call.method = m.send
	}
	if call.legacy() {
		if call.params, err = legacyParams(params, stream); err != nil {
			return failed(outcome.NotSent, err.Error())
		}
	}
	t.method = call.method
	err = r.exchange(sctx, call, t, rep)
	stopSend()
	if err == nil && !stream && t.taskID != "" && !settled(t.state) && ctx.Err() == nil {
		err = r.poll(ctx, call, t)
	}
	rep.ContextID, rep.TaskID, rep.State = r.c.redact.String(t.contextID), r.c.redact.String(t.taskID), stateName(t.state)
	rep.UsageClaims = t.usage
	res := r.settle(ctx, err, t, rep)
	if t.taskID != "" && res.Outcome.Status != outcome.Completed && !settled(t.state) {
		r.cancelTask(ctx, remote, card, t.taskID, rep)
	}
	return res
}

// card fetches remote's card for one child, as [Client.FetchCard] does,
// and admits it: a card fetched with the same bytes as the one the last
// child of remote admitted is that admission (AdmitCard's result depends
// on the remote's configuration and the bytes alone), so only a card that
// changed is checked again. Every child still fetches the card; a refusal
// is never kept.
func (r *Runner) card(ctx context.Context, remote Remote) (*Card, error) {
	data, err := r.c.getCard(ctx, remote)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	last, ok := r.admitted[remote.Name]
	r.mu.Unlock()
	if ok && bytes.Equal(last.data, data) {
		return last.card, nil
	}
	card, err := AdmitCard(remote, data)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.admitted == nil {
		r.admitted = map[string]admittedCard{}
	}
	r.admitted[remote.Name] = admittedCard{data: data, card: card}
	r.mu.Unlock()
	return card, nil
}

// follow is a resumed remote child: the task the remote bound before the
// host running it stopped (spec.TaskID; the request left then, so the
// delivery is at least may_have_been_sent) is polled with GetTask, by the
// same rules as a blocking send's, until it settles or ctx ends; nothing
// is sent again. A task the peer no longer knows fails the child.
func (r *Runner) follow(ctx context.Context, remote Remote, card *Card, spec children.RemoteSpec, rep *Report, onBound func(taskID, contextID string)) children.Result {
	rep.Sent = true
	t := &tracker{remote: remote.Name, max: r.c.opts.maxOutput(), taskID: spec.TaskID, contextID: spec.ContextID}
	onBound(spec.TaskID, spec.ContextID)
	call := rpcCall{remote: remote, card: card, id: r.c.opts.newID()}
	err := r.poll(ctx, call, t)
	rep.ContextID, rep.TaskID, rep.State = r.c.redact.String(t.contextID), r.c.redact.String(t.taskID), stateName(t.state)
	rep.UsageClaims = t.usage
	res := r.settle(ctx, err, t, rep)
	if res.Outcome.Status != outcome.Completed && !settled(t.state) {
		r.cancelTask(ctx, remote, card, t.taskID, rep)
	}
	return res
}

// exchange sends call and folds every answer into t until the task
// settles, the stream ends or ctx ends.
func (r *Runner) exchange(ctx context.Context, call rpcCall, t *tracker, rep *Report) error {
	rep.Sent = true
	resp, err := r.c.post(ctx, call)
	if err != nil {
		var ns *notSentError
		if errors.As(err, &ns) {
			rep.Sent = false
		}
		return err
	}
	defer resp.Body.Close()
	if !call.stream {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		ev, err := r.event(call, data, t)
		if err != nil {
			return err
		}
		return t.apply(ev)
	}
	frames := newFrameReader(resp.Body, MaxFrameBytes)
	for n := 0; ; n++ {
		if n >= MaxFrames {
			return t.protocol("the stream has more than %d frames", MaxFrames)
		}
		data, err := frames.next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return errStreamLost
			}
			if errors.Is(err, errFrameTooLarge) {
				return t.protocol("an SSE frame exceeds %d bytes", MaxFrameBytes)
			}
			return err
		}
		ev, err := r.event(call, data, t)
		if err != nil {
			return err
		}
		if err := t.apply(ev); err != nil {
			return err
		}
		if settled(t.state) {
			return nil
		}
	}
}

// sendParams are SendMessage's and SendStreamingMessage's params: the
// message and the accepted output modes, nothing else.
type sendParams struct {
	Configuration struct {
		AcceptedOutputModes []string `json:"acceptedOutputModes"`
		ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
	} `json:"configuration"`
	Message *sdk.Message `json:"message"`
}

// cancelParams are CancelTask's params.
type cancelParams struct {
	ID string `json:"id"`
}

// errStreamLost is a stream that ended before its task settled.
var errStreamLost = errors.New("a2a: the stream ended before the remote task settled")

// event decodes one answer of call (a send's result or a stream frame) to
// its event. A 1.0 answer that is well formed, the common case, is decoded
// by hand in one pass (decodeOnePass); any other answer is decoded the
// general way, the envelope, then the result, each checked by its own
// rules, so a malformed one fails as it always did.
func (r *Runner) event(call rpcCall, data []byte, t *tracker) (sdk.Event, error) {
	if !call.legacy() {
		if ev, ok := decodeOnePass(data, call.id, call.stream); ok {
			return ev, nil
		}
	}
	env, err := r.c.envelope(call, data)
	if err != nil {
		return nil, err
	}
	ev, err := call.decode(env.Result)
	if err != nil {
		return nil, t.protocol("%s", err)
	}
	return ev, nil
}

// decode decodes one send result or stream frame in the call's version.
func (call rpcCall) decode(raw json.RawMessage) (sdk.Event, error) {
	if call.legacy() {
		return decodeLegacyResult(raw, call.stream)
	}
	return decodeResult(raw, call.stream)
}

// decodeResult decodes a send result (exactly one message or task) or a
// stream frame's (exactly one of task, message, statusUpdate,
// artifactUpdate). The decoder's own message is not kept: it can quote
// the peer.
func decodeResult(raw json.RawMessage, stream bool) (sdk.Event, error) {
	var one oneResult
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, fmt.Errorf("the result does not decode as A2A 1.0")
	}
	return one.event(stream)
}

// oneResult is a 1.0 send result or stream frame's result: exactly one of
// its fields is set.
type oneResult struct {
	Task           *sdk.Task                    `json:"task"`
	Message        *sdk.Message                 `json:"message"`
	StatusUpdate   *sdk.TaskStatusUpdateEvent   `json:"statusUpdate"`
	ArtifactUpdate *sdk.TaskArtifactUpdateEvent `json:"artifactUpdate"`
}

// event is the one event one holds, checked as decodeResult says.
func (one *oneResult) event(stream bool) (sdk.Event, error) {
	var ev sdk.Event
	n := 0
	if one.Task != nil {
		ev, n = one.Task, n+1
	}
	if one.Message != nil {
		ev, n = one.Message, n+1
	}
	if one.StatusUpdate != nil {
		ev, n = one.StatusUpdate, n+1
	}
	if one.ArtifactUpdate != nil {
		ev, n = one.ArtifactUpdate, n+1
	}
	if n != 1 {
		return nil, fmt.Errorf("the result must wrap exactly one of task, message, statusUpdate and artifactUpdate, it has %d", n)
	}
	switch ev.(type) {
	case *sdk.Task, *sdk.Message:
	default:
		if !stream {
			return nil, fmt.Errorf("a send result must wrap a task or a message")
		}
	}
	return ev, nil
}

// settle maps how the exchange ended to the child's result.
func (r *Runner) settle(ctx context.Context, err error, t *tracker, rep *Report) children.Result {
	delivery := outcome.ResponseReceived
	if !rep.Sent {
		delivery = outcome.NotSent
	} else if t.taskID == "" && !t.message {
		delivery = outcome.MayHaveBeenSent
	}
	if ctx.Err() != nil {
		// A cancel or the deadline decides, whatever arrived after it.
		return ended(ctx, delivery)
	}
	switch {
	case errors.Is(err, ErrOutputLimit):
		return children.Result{Outcome: event.Outcome{Status: outcome.LimitExceeded, Limit: outcome.LimitOutputBytes}}
	case errors.Is(err, errStreamLost):
		return failed(delivery, "the stream ended before the remote task settled")
	case err != nil:
		var pe *ProtocolError
		if errors.As(err, &pe) {
			return failed(delivery, pe.Error())
		}
		if errors.Is(err, ErrConfig) || errors.Is(err, ErrRequest) {
			return failed(outcome.NotSent, err.Error())
		}
		return failed(delivery, "the exchange failed: "+transportDetail(err))
	}
	parts, masked := maskParts(r.c.redact, resultParts(t.parts))
	rep.Parts = parts
	switch t.state {
	case sdk.TaskStateCompleted:
		out, structured := render(parts)
		return children.Result{Outcome: event.Outcome{Status: outcome.Completed, Output: &out, Masked: masked}, Output: out, StructuredOutput: structured}
	case sdk.TaskStateFailed:
		return failed(delivery, "the remote task failed")
	case sdk.TaskStateRejected:
		return failed(delivery, "the remote rejected the task")
	case sdk.TaskStateCanceled:
		return failed(delivery, "the remote canceled the task (a peer claim)")
	case sdk.TaskStateInputRequired:
		return failed(delivery, "the remote task needs input (input-required); it is not resubmitted")
	case sdk.TaskStateAuthRequired:
		return failed(delivery, "the remote task needs authentication (auth-required); it is not resubmitted")
	}
	return failed(delivery, "the blocking send returned before the remote task settled")
}

// cancelTask sends the task's one CancelTask, bounded by CancelTimeout on
// the clock, on a context that outlives the child's own (which may be the
// reason for the cancel). The answer is a claim: it is recorded, never
// taken as proof of rollback, and any result in it is ignored.
func (r *Runner) cancelTask(ctx context.Context, remote Remote, card *Card, taskID string, rep *Report) {
	if rep.CancelSent {
		return
	}
	rep.CancelSent = true
	cctx, stop := timerContext(context.WithoutCancel(ctx), r.c.opts.clock(), CancelTimeout, errCancelTimeout)
	defer stop()
	call := rpcCall{remote: remote, card: card, method: methodsOf(card).cancel, params: cancelParams{ID: taskID}, id: r.c.opts.newID()}
	resp, err := r.c.post(cctx, call)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	env, err := r.c.envelope(call, data)
	if err != nil {
		return
	}
	if task, ok := decodeTask(call, env.Result); ok && string(task.ID) == taskID {
		rep.CancelReceipt = stateName(task.Status.State)
	}
}

var errCancelTimeout = errors.New("a2a: CancelTask took longer than its bound")

func stateName(s sdk.TaskState) string {
	if s == sdk.TaskStateUnspecified {
		return ""
	}
	return string(s)
}

// ended is the result of a child whose context ended: timed_out at the
// deadline, cancelled otherwise.
func ended(ctx context.Context, _ outcome.Delivery) children.Result {
	if errors.Is(context.Cause(ctx), errDeadline) {
		return children.Result{Outcome: event.Outcome{Status: outcome.TimedOut}}
	}
	return children.Result{Outcome: event.Outcome{Status: outcome.Cancelled}}
}

func failed(d outcome.Delivery, reason string) children.Result {
	if len(reason) > 2048 {
		reason = reason[:2048]
	}
	return children.Result{Outcome: event.Outcome{Status: outcome.Failed, Code: outcome.FailRemoteTask, Delivery: d, Reason: reason}}
}

// maskParts masks every known secret in a result's parts: a peer that
// echoes the bearer back never gets it into a record.
func maskParts(set Masker, parts []children.Part) ([]children.Part, int) {
	total := 0
	for i := range parts {
		p := &parts[i]
		var n int
		if p.Text != nil {
			s, k := set.MaskString(*p.Text)
			p.Text, n = &s, n+k
		}
		if p.Data != nil {
			var k int
			p.Data, k = set.MaskJSON(p.Data)
			n += k
		}
		if p.Raw != nil {
			var k int
			p.Raw, k = set.Mask(p.Raw)
			n += k
		}
		var k int
		p.URL, k = set.MaskString(p.URL)
		n += k
		p.Filename, k = set.MaskString(p.Filename)
		n += k
		p.MediaType, k = set.MaskString(p.MediaType)
		total += n + k
	}
	return parts, total
}

// growStack grows a new goroutine's stack once, while it is one frame
// deep, to what a remote exchange needs: the HTTP client and the JSON
// decoding run deep, and a stack grown frame by frame on the way copies
// and re-walks every frame at each doubling (measured: a tenth of a
// remote round trip's CPU on the fixture peer).
//
//go:noinline
func growStack(i int) byte {
	var pad [32 << 10]byte
	pad[i] = 1
	return pad[len(pad)-1-i]
}
