package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/skills"
)

// runOverrides maps run flags to typed deployment overrides.
func runOverrides(p *parsed) ([]pablo.Override, error) {
	var out []pablo.Override
	seconds := func(flag, target string) error {
		v := p.one(flag)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 86400 {
			return usagef("--%s takes 1..86400 seconds", flag)
		}
		out = append(out, pablo.Override{Target: target, Value: n * 1000})
		return nil
	}
	if err := seconds("timeout", "limits.max_run_duration_ms"); err != nil {
		return nil, err
	}
	if err := seconds("tool-timeout", "limits.max_tool_duration_ms"); err != nil {
		return nil, err
	}
	for flag, target := range map[string]string{"max-model-calls": "limits.max_model_calls", "max-tool-calls": "limits.max_tool_calls"} {
		if v := p.one(flag); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > 4294967295 {
				return nil, usagef("--%s takes 0..4294967295", flag)
			}
			out = append(out, pablo.Override{Target: target, Value: n})
		}
	}
	if v := p.one("max-total-tokens"); v != "" {
		out = append(out, pablo.Override{Target: "limits.max_total_tokens", Value: v})
	}
	if v := p.one("max-cost-microusd"); v != "" {
		out = append(out, pablo.Override{Target: "limits.max_cost_microusd", Value: v})
	}
	switch v := p.one("prompt-caching"); v {
	case "":
	case "provider_default", "auto":
		out = append(out, pablo.Override{Target: "model.prompt_caching", Value: v})
	default:
		return nil, usagef("--prompt-caching takes provider_default or auto, got %q", v)
	}
	if p.bools["no-shell"] {
		out = append(out, pablo.Override{Target: "shell.enabled", Value: false})
	}
	if p.bools["no-filesystem"] {
		if p.bools["allow-write"] {
			return nil, usagef("--no-filesystem conflicts with --allow-write")
		}
		out = append(out, pablo.Override{Target: "filesystem.enabled", Value: false})
	}
	if p.bools["allow-write"] {
		out = append(out, pablo.Override{Target: "filesystem.write", Value: true})
	}
	if p.bools["capture-content"] {
		out = append(out, pablo.Override{Target: "trace.capture_content", Value: true})
	}
	if skills := p.values["skill"]; len(skills) > 0 {
		if len(skills) > 8 {
			return nil, usagef("--skill is given %d times: at most 8 Skills are active at once", len(skills))
		}
		items := make([]any, len(skills))
		for i, s := range skills {
			if s == "" || len(s) > 512 {
				return nil, usagef("--skill takes ROOT/NAME or a unique short name of 1..512 bytes")
			}
			items[i] = s
		}
		out = append(out, pablo.Override{Target: "skills.activate", Value: items})
	}
	if err := authority.ValidateRoles(p.values["role"]); err != nil {
		return nil, usagef("--role: %v", err)
	}
	if err := skills.ValidateTaskKind(p.one("kind")); err != nil {
		return nil, usagef("--kind: %v", err)
	}
	more, err := extraOverrides(p)
	if err != nil {
		return nil, err
	}
	return append(out, more...), nil
}

// runCommand implements `pablo run "TASK"`.
func runCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "run")
	if err != nil {
		return preAdmission(h, p, "invalid_arguments", err)
	}
	if len(p.args) != 1 {
		return preAdmission(h, p, "invalid_arguments", usagef("usage: pablo run \"TASK\" [--config F --bind workspace=DIR | --provider NAME --model ID] [--json] [--store PATH] [--script FILE]"))
	}
	overrides, err := runOverrides(p)
	if err != nil {
		return preAdmission(h, p, "invalid_arguments", err)
	}
	d, cleanup, err := loadRun(ctx, p, h, overrides)
	defer cleanup()
	if err != nil {
		code := "invalid_configuration"
		var ue *usageError
		if errors.As(err, &ue) {
			code = "invalid_arguments"
		}
		return preAdmission(h, p, code, err)
	}
	return runTask(ctx, h, p, d, p.args[0])
}

// incomingTrace puts the caller's W3C trace context (--traceparent,
// --tracestate) on ctx, so the task joins the caller's trace. With the
// deployment's propagators set to [] the context is checked but not used.
func incomingTrace(ctx context.Context, p *parsed, d *pablo.Deployment) (context.Context, error) {
	tp, ts := p.one("traceparent"), p.one("tracestate")
	if tp == "" {
		if ts != "" {
			return ctx, usagef("--tracestate needs --traceparent")
		}
		return ctx, nil
	}
	sc, err := pablo.ParseTraceContext(tp, ts)
	if err != nil {
		return ctx, usagef("--traceparent/--tracestate: %v", err)
	}
	if !slices.Contains(d.Options().OTel.Propagators, "tracecontext") {
		return ctx, nil
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc), nil
}

// preAdmission reports a failure before a task exists: with --json, one
// envelope with null IDs; always exit 2.
func preAdmission(h *host, p *parsed, code string, err error) error {
	if p != nil && p.bools["json"] {
		writeJSON(h, pablo.PreAdmissionFailure(code, message(err)))
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	return &exitError{code: 2, err: err}
}

func writeJSON(h *host, v any) {
	b, _ := json.Marshal(v)
	h.stdout.Write(append(b, '\n'))
}

// runTask runs one task of a loaded deployment and reports it.
func runTask(ctx context.Context, h *host, p *parsed, d *pablo.Deployment, input string) error {
	return hostTask(ctx, h, p, d, false, func(ctx context.Context, rt *pablo.Runtime, approver pablo.Approver) (*pablo.Task, error) {
		return rt.StartTask(ctx, pablo.TaskRequest{Input: input, Approver: approver, Roles: p.values["role"], Kind: p.one("kind")})
	})
}

// hostTask builds the runtime of a loaded deployment as run's flags say,
// starts one task on it with start, and reports it. resuming: the task is
// one of the store's, so a store another process holds is that task's
// live lease.
func hostTask(ctx context.Context, h *host, p *parsed, d *pablo.Deployment, resuming bool, start func(context.Context, *pablo.Runtime, pablo.Approver) (*pablo.Task, error)) error {
	jsonOut := p.bools["json"] || d.Options().Interfaces.CLIOutput == "json"
	if s := streamOf(h.stdout); jsonOut && s != nil {
		s.printsJSON() // the deployment's cli_output, without --json
	}
	ctx, err := incomingTrace(ctx, p, d)
	if err != nil {
		return preAdmission(h, p, "invalid_arguments", err)
	}
	tokens, authorizer, release := h.mcpAuth()
	defer release()
	hopts := pablo.HostOptions{LookupEnv: h.lookupEnv, FixtureEndpoint: p.one("fixture-endpoint"), Clock: h.clock, NewID: h.newID,
		MCPTokens: tokens, MCPAuthorizer: authorizer, EgressForwarder: h.forwarder}
	if path := p.one("script"); path != "" {
		// Under lock no flag replaces the model, its endpoint or its
		// credentials (--fixture-endpoint is refused the same way); the
		// file is not even opened.
		if d.Locked() {
			return preAdmission(h, p, "invalid_configuration", &deployment.Error{Code: deployment.CodeInvalidValue, Option: "--script", Message: "a script never replaces a locked deployment's model"})
		}
		s, err := pablo.LoadScript(ctx, path)
		if err != nil {
			return preAdmission(h, p, "invalid_arguments", usagef("--script: %v", err))
		}
		hopts.Model = pablo.NewScriptModel(s)
	}
	if value := storeValue(h, p); value != "" {
		store, err := openStore(ctx, h, d, value, false)
		if resuming && errors.Is(err, ledger.ErrLocked) {
			return startFailure(h, p, fmt.Errorf("--store: %w", err))
		}
		if err != nil {
			return preAdmission(h, p, "invalid_arguments", fmt.Errorf("--store: %w", err))
		}
		defer store.Close()
		hopts.Store = store
	}
	view := newProgress(h, jsonOut)
	obs, code, err := openObservability(ctx, h, p, d)
	if err != nil {
		return preAdmission(h, p, code, err)
	}
	defer obs.Close(ctx)
	hopts.Sink = obs.sink(view.event)
	hopts.Tracer = obs.otel.Tracer()
	rt, err := d.NewRuntime(ctx, hopts)
	if err != nil {
		code := "invalid_configuration"
		switch {
		case errors.Is(err, authority.ErrCredential):
			code = "credential_unavailable"
		case errors.Is(err, pablo.ErrUnavailable):
			code = "invalid_arguments"
		}
		return preAdmission(h, p, code, err)
	}
	defer rt.Close()
	approver, closeApprover, err := runApprover(p, h)
	if err != nil {
		return preAdmission(h, p, "invalid_arguments", err)
	}
	defer closeApprover()
	if err := knownCapabilities(ctx, d, h, "--approve", p.values["approve"]); err != nil {
		return preAdmission(h, p, "invalid_arguments", err)
	}
	task, err := start(ctx, rt, approver)
	if err != nil {
		return startFailure(h, p, err)
	}
	obj := task.Wait()
	view.done()
	if jsonOut {
		writeJSON(h, obj)
	} else {
		view.summary(obj)
	}
	switch {
	case obj.Outcome.Status == event.StatusCompleted:
		return nil
	case obj.Outcome.Status == event.StatusCancelled && ctx.Err() != nil:
		return &exitError{code: 130}
	}
	return &exitError{code: 1}
}

// progress renders events in text mode: model text to stdout, tool
// progress to stderr, a live status line when stderr is a terminal.
//
// What a model, a tool or a provider wrote reaches a terminal escaped, as
// everything a command writes does (stream), so an OSC 52 clipboard write
// or a clear screen in a model's text is shown, never acted on. Off a
// terminal (a pipe, a file) the text is written exactly as the model
// wrote it.
type progress struct {
	h     *host
	quiet bool
	// tty: stderr is a terminal, with a live status line.
	tty      bool
	lastText bool
	// statusShown: a live status line is on the terminal, to be cleared
	// before the model's text goes on (once, not at every delta: stdout
	// and stderr are often the same terminal, and clearing the line then
	// would erase the text written on it).
	statusShown bool
	// model is the provider/model of the call in flight.
	model string
}

func newProgress(h *host, quiet bool) *progress {
	return &progress{h: h, quiet: quiet, tty: onTerminal(h.stderr)}
}

// clearLine is the terminal's carriage return and erase-line: the live
// status line's reset, the one control sequence `pablo run` writes.
const clearLine = "\r\x1b[2K"

func (pr *progress) status(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if pr.tty {
		streamOf(pr.h.stderr).control(clearLine)
		io.WriteString(pr.h.stderr, oneLine(line))
		pr.statusShown = true
		return
	}
	fmt.Fprintln(pr.h.stderr, line)
}

// clearStatus clears the live status line, if one is shown.
func (pr *progress) clearStatus() {
	if pr.statusShown {
		streamOf(pr.h.stderr).control(clearLine)
		pr.statusShown = false
	}
}

// endText ends the model's text on stdout with a newline.
func (pr *progress) endText() {
	if !pr.lastText {
		return
	}
	fmt.Fprintln(pr.h.stdout)
	pr.lastText = false
}

func (pr *progress) event(ev event.Event) error {
	if pr.quiet {
		return nil
	}
	if ev.Agent.Depth > 0 {
		pr.child(ev)
		return nil
	}
	switch ev.Type {
	case event.TextDelta:
		pr.clearStatus()
		pr.lastText = true
		_, err := io.WriteString(pr.h.stdout, ev.Text)
		return err
	case event.ModelStarted:
		pr.model = ev.Provider + "/" + ev.Model
		pr.status("· %s thinking…", pr.model)
	case event.ModelFinished:
		if r := ev.ModelRoute; r != nil && r.RetryInMS != nil {
			pr.status("· %s", retryLine(r))
		} else if ev.RetryInMS != nil {
			pr.status("· %s failed; waiting %s to retry", pr.model, time.Duration(*ev.RetryInMS)*time.Millisecond)
		}
	case event.ToolStarted:
		pr.endText()
		pr.status("→ %s %s", ev.Call.Name, truncate(string(ev.Call.Arguments), 120))
	case event.ToolFinished:
		var r struct {
			Status string `json:"status"`
		}
		json.Unmarshal(ev.Result, &r)
		pr.status("← %s %s", ev.Name, r.Status)
	case event.SkillActivated:
		pr.status("skill %s activated", ev.Skill.QualifiedName)
	case event.ToolOutput:
		// Live output: its last line, so a long call shows it is moving.
		// Off a terminal only progress messages (at most 64 a call) are
		// worth a line each.
		if line := lastLine(ev.Text); line != "" && (pr.tty || ev.Stream == "progress") {
			pr.status("  %s %s: %s", ev.Name, ev.Stream, truncate(line, 120))
		}
	}
	return nil
}

// retryLine is the status line of a model attempt that failed and is
// retried on the same entry after a wait (options.model.retry).
func retryLine(r *event.RouteAttempt) string {
	why := "failed"
	if r.RetryClass != nil {
		why = strings.ReplaceAll(*r.RetryClass, "_", " ")
	}
	wait := time.Duration(*r.RetryInMS) * time.Millisecond
	return fmt.Sprintf("%s/%s %s; waiting %s to retry (attempt %d)", r.Provider, r.Model, why, wait, r.Attempt+1)
}

// child renders a supervised child's event as a status line naming the
// child: stdout carries the root's answer alone, so a child's text is not
// printed (its result reaches the root as the subagent tool's).
func (pr *progress) child(ev event.Event) {
	who := "[child " + shorten(ev.Agent.AgentID, 8) + "]"
	if ev.Type != event.TextDelta {
		pr.endText()
	}
	switch ev.Type {
	case event.ModelStarted:
		pr.status("  %s · %s/%s thinking…", who, ev.Provider, ev.Model)
	case event.ToolStarted:
		pr.status("  %s → %s %s", who, ev.Call.Name, truncate(string(ev.Call.Arguments), 100))
	case event.ToolFinished:
		var r struct {
			Status string `json:"status"`
		}
		json.Unmarshal(ev.Result, &r)
		pr.status("  %s ← %s %s", who, ev.Name, r.Status)
	case event.RunFinished:
		pr.status("  %s %s", who, ev.Outcome.Status)
	}
}

// lastLine is the last non-blank line of s, without control characters.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\n")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(lines[len(lines)-1]))
}

func (pr *progress) done() {
	if pr.quiet {
		return
	}
	pr.endText()
	pr.clearStatus()
}

func (pr *progress) summary(obj *pablo.TaskObject) {
	o := obj.Outcome
	detail := ""
	switch o.Status {
	case event.StatusPolicyDenied:
		b, _ := json.Marshal(o.Rule)
		detail = " rule " + string(b)
	case event.StatusLimitExceeded:
		detail = " limit " + string(o.Limit)
	case event.StatusFailed:
		detail = " " + string(o.Code) + " (" + string(o.Delivery) + ")"
	}
	acc := obj.Accounting
	fmt.Fprintf(pr.h.stderr, "%s%s · run %s · %s · %s\n", o.Status, detail, *obj.RunID, plural(acc.ModelCalls, "model call"), plural(acc.ToolCalls, "tool call"))
	if o.Reason != "" {
		fmt.Fprintf(pr.h.stderr, "  why: %s\n", o.Reason)
	}
}

// plural writes a count with its noun: "1 tool call", "2 tool calls".
func plural(n any, noun string) string {
	s := fmt.Sprint(n)
	if s == "1" {
		return s + " " + noun
	}
	return s + " " + noun + "s"
}

// truncate puts s on one line and shortens it to n bytes.
func truncate(s string, n int) string {
	return shorten(strings.ReplaceAll(s, "\n", " "), n)
}

// shorten cuts s to at most n bytes on a character boundary and marks the
// cut with an ellipsis, so a reader can tell a shortened text from a whole
// one.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
