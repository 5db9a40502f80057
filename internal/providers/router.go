package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sort"
	"strconv"
	"sync/atomic"
	"time"
)

// RouterEndpoint is the Vercel AI Gateway's evaluation-model endpoint,
// where a route's complexity router classifies a task. It is fixed: a
// deployment cannot move it.
const RouterEndpoint = "https://ai-gateway.vercel.sh/v4/ai/evaluation-model"

// RouterModel is the only classifier a router calls.
const RouterModel = "typesafe-ai/jev"

// MaxRouterRequestBytes bounds the classification request: a larger body
// is context_overflow and is never sent.
const MaxRouterRequestBytes = 128 << 10

// maxRouterResponseBytes bounds the classification answer read back.
const maxRouterResponseBytes = 1 << 20

// ErrRouterTimedOut is the cause of a classification that ran out of the
// router's timeout_ms.
var ErrRouterTimedOut = errors.New("providers: the complexity router did not answer within its timeout")

// ErrRouterChoice marks an answer whose choice is not a configured
// category (with errors.Is on the *Error it returns).
var ErrRouterChoice = errors.New("providers: the complexity router chose no configured category")

// RouterCategory is one category a router may choose.
type RouterCategory struct {
	// Name is the category's key; the answer's choice must equal one.
	Name string
	// Description is the criterion the classifier reads.
	Description string
}

// RouterOptions configure a [Router] (options.routes.NAME.router).
type RouterOptions struct {
	// Endpoint is where the classification is posted; empty means
	// RouterEndpoint. Only a host (a test fixture) sets it, never a
	// deployment.
	Endpoint string
	// Secret is the Vercel credential's value, sent as a bearer token.
	Secret string
	// Instructions are the router's classification instructions.
	Instructions string
	// Timeout bounds the classification (timeout_ms); the caller's
	// deadline still applies.
	Timeout time.Duration
	// Categories are the choices, at least two.
	Categories []RouterCategory
}

// Router classifies a task's complexity once, at task start, with one call
// to the evaluation-model endpoint. It is safe for concurrent use.
type Router struct {
	c    *Client
	opts RouterOptions
}

// NewRouter checks opts and returns a Router using client c.
func NewRouter(c *Client, opts RouterOptions) (*Router, error) {
	if len(opts.Categories) < 2 {
		return nil, errors.New("providers: a router needs at least 2 categories")
	}
	if opts.Timeout <= 0 {
		return nil, errors.New("providers: a router needs a positive timeout")
	}
	if opts.Endpoint == "" {
		opts.Endpoint = RouterEndpoint
	}
	opts.Categories = append([]RouterCategory(nil), opts.Categories...)
	return &Router{c: c, opts: opts}, nil
}

// Classification is a router's answer: the chosen category and the usage
// the endpoint reported (nil counters are unknown).
type Classification struct {
	Category     string
	InputTokens  *uint64
	OutputTokens *uint64
}

// routerRequest is the evaluation-model request: the task as shared state
// and one choice question.
type routerRequest struct {
	State struct {
		Task         string `json:"task"`
		Instructions string `json:"instructions"`
	} `json:"state"`
	Questions struct {
		Complexity struct {
			Type         string            `json:"type"`
			Instructions string            `json:"instructions"`
			Criteria     map[string]string `json:"criteria"`
		} `json:"complexity"`
	} `json:"questions"`
}

// RequestBody is the classification request for task and instructions:
// only the original task and the run's instructions are sent.
func (r *Router) RequestBody(task, instructions string) ([]byte, error) {
	var req routerRequest
	req.State.Task, req.State.Instructions = task, instructions
	q := &req.Questions.Complexity
	q.Type, q.Instructions, q.Criteria = "choice", r.opts.Instructions, map[string]string{}
	for _, c := range r.opts.Categories {
		q.Criteria[c.Name] = c.Description
	}
	return json.Marshal(&req)
}

// Classify posts the classification for task and instructions and returns
// the chosen category. Every failure is an *Error with its delivery
// certainty: a body over MaxRouterRequestBytes is context_overflow (not
// sent), a non-2xx answer provider_rejected, a lapse of the router's
// timeout model_attempt_timed_out, an answer that is not the expected
// JSON or whose choice is not a configured category malformed_stream.
func (r *Router) Classify(ctx context.Context, task, instructions string) (*Classification, error) {
	body, err := r.RequestBody(task, instructions)
	if err != nil {
		return nil, &Error{Code: CodeTransport, Delivery: NotSent, Reason: "the classification request cannot be encoded", Err: err}
	}
	if len(body) > MaxRouterRequestBytes {
		return nil, &Error{Code: CodeContextTooLarge, Delivery: NotSent,
			Reason: "the classification request is " + strconv.Itoa(len(body)) + " bytes, over the router's " + strconv.Itoa(MaxRouterRequestBytes) + "-byte bound"}
	}
	cctx, cancel := context.WithTimeoutCause(ctx, r.opts.Timeout, ErrRouterTimedOut)
	defer cancel()
	raw, err := r.post(cctx, body)
	if err != nil {
		var pe *Error
		if ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrRouterTimedOut) && errors.As(err, &pe) && pe.Code == CodeTransport {
			return nil, &Error{Code: CodeAttemptTimedOut, Delivery: pe.Delivery, RetryClass: RetryTransportUncertain,
				Reason: "the complexity router did not answer within " + r.opts.Timeout.String(), Err: ErrRouterTimedOut}
		}
		return nil, err
	}
	return r.parse(raw)
}

// post sends the classification and returns the 2xx answer's JSON body.
func (r *Router) post(ctx context.Context, body []byte) ([]byte, error) {
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, r.opts.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Code: CodeTransport, Delivery: NotSent, Reason: "the router endpoint is not a valid URL"}
	}
	req.Header = authHeader("Authorization", "bearer", r.opts.Secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Ai-Model-Id", RouterModel)
	req.Header.Set("Ai-Evaluation-Model-Specification-Version", "4")
	req.Header.Set("Ai-Gateway-Protocol-Version", "0.0.1")
	req.Header.Set("Ai-Gateway-Auth-Method", "api-key")
	resp, err := r.c.hc.Do(req)
	if err != nil {
		return nil, transportError(ctx, err, connected.Load(), r.opts.Endpoint)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The error body is read, bounded, for the router's message
		// alone, masked; it is never kept.
		var message string
		if buf := readErrorBody(resp.Body); len(buf) <= MaxOverflowBodyBytes {
			if pe, ok := parseProviderError(buf); ok {
				message = said(pe.message, r.opts.Secret)
			}
		}
		return nil, statusError(resp.StatusCode, message)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Status: resp.StatusCode,
			Reason: "the router's answer is not JSON (Content-Type must be application/json)"}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRouterResponseBytes+1))
	if err != nil {
		e := transportError(ctx, err, true, r.opts.Endpoint)
		e.Delivery, e.RetryClass = ResponseReceived, ""
		return nil, e
	}
	if len(raw) > maxRouterResponseBytes {
		return nil, malformed("the router's answer exceeds %d bytes", maxRouterResponseBytes)
	}
	return raw, nil
}

// routerAnswer is the part of the evaluation-model answer a router reads.
type routerAnswer struct {
	Answers map[string]struct {
		Type   string  `json:"type"`
		Choice *string `json:"choice"`
	} `json:"answers"`
	Usage *struct {
		InputTokens  *uint64 `json:"inputTokens"`
		OutputTokens *uint64 `json:"outputTokens"`
	} `json:"usage"`
}

// ParseRouterAnswer reads an evaluation-model answer: answers.complexity
// must be a choice naming one of categories. It is the parser Classify
// uses, exported for its fuzz target and for hosts that check fixtures.
func ParseRouterAnswer(raw []byte, categories []string) (*Classification, error) {
	var a routerAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, malformed("the router's answer is not an evaluation-model answer")
	}
	q, ok := a.Answers["complexity"]
	if !ok || q.Choice == nil || (q.Type != "" && q.Type != "choice") {
		return nil, malformed("the router's answer has no answers.complexity.choice")
	}
	i := sort.SearchStrings(categories, *q.Choice)
	if i == len(categories) || categories[i] != *q.Choice {
		// The choice is not echoed: it is the classifier's text.
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Err: ErrRouterChoice,
			Reason: "the router's answers.complexity.choice is not a configured category"}
	}
	c := &Classification{Category: *q.Choice}
	if a.Usage != nil {
		c.InputTokens, c.OutputTokens = a.Usage.InputTokens, a.Usage.OutputTokens
	}
	return c, nil
}

func (r *Router) parse(raw []byte) (*Classification, error) {
	names := make([]string, len(r.opts.Categories))
	for i, c := range r.opts.Categories {
		names[i] = c.Name
	}
	sort.Strings(names)
	return ParseRouterAnswer(raw, names)
}
