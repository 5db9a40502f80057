package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
)

// observability is what a run records besides its own output: the native
// JSONL trace (--trace PATH, or options.trace.path) and OTLP span export
// (options.otel).
type observability struct {
	trace  func(event.Event) error
	closer io.Closer
	otel   *otelPipeline
}

// openObservability sets up the trace and the span pipeline of one run. On
// failure it returns the pre-admission code to report: trace_setup_failed,
// credential_unavailable or invalid_configuration.
func openObservability(ctx context.Context, h *host, p *parsed, d *pablo.Deployment) (*observability, string, error) {
	obs := &observability{closer: nopCloser{}}
	pipe, err := newOTel(ctx, d, h.lookupEnv)
	if err != nil {
		if errors.Is(err, authority.ErrCredential) {
			return nil, "credential_unavailable", err
		}
		return nil, "invalid_configuration", err
	}
	obs.otel = pipe
	fail := func(err error) (*observability, string, error) {
		pipe.Shutdown(ctx)
		return nil, "trace_setup_failed", err
	}
	if path := p.one("trace"); path != "" {
		// A host path from the command line, relative to the invocation
		// directory; the deployment still sets the bound and capture.
		if strings.ContainsAny(path, "{}") {
			return fail(usagef("--trace %q: the {session_id} template is for ACP sessions; give a plain new file path", path))
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(h.workDir, path)
		}
		tw, err := d.OpenTrace(path, d.TraceOptions())
		if err != nil {
			return fail(err)
		}
		obs.trace, obs.closer = tw.Write, tw
		return obs, "", nil
	}
	sink, closer, err := d.TraceSink("")
	if err != nil {
		return fail(err)
	}
	obs.trace, obs.closer = sink, closer
	return obs, "", nil
}

// sink chains the trace before the host's own sink, so the trace holds
// every event the host saw.
func (o *observability) sink(own func(event.Event) error) func(event.Event) error {
	return pablo.ChainSinks(o.trace, own)
}

// Close closes the trace and flushes the span pipeline.
func (o *observability) Close(ctx context.Context) error {
	return errors.Join(o.closer.Close(), o.otel.Shutdown(ctx))
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
