package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/otlp"
)

// otelSchemaURL and otelScope are the reference's OTel mapping identity
// (GenAI semantic conventions, instrumentation scope "pablo").
const (
	otelSchemaURL = "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev"
	otelScope     = "pablo"
	// otelShutdown is the reference's fixed shutdown bound.
	otelShutdown = 2 * time.Second
)

// otelPipeline is the span pipeline options.otel describes: an SDK tracer
// provider with a batch processor in front of an OTLP/HTTP exporter. Only
// the reference host builds one; the library sees a trace.Tracer.
type otelPipeline struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// newOTel builds the pipeline of d's options.otel, or returns nil when the
// exporter is "none" or the SDK is disabled. Every setting comes from the
// deployment: ambient OTEL_* variables are never read (the SDK's own
// environment defaults are all overridden explicitly below, and the
// exporter reads no environment at all). The headers credential resolves
// for consumer otel.headers at exactly the configured endpoint.
func newOTel(ctx context.Context, d *pablo.Deployment, lookupEnv func(string) (string, bool)) (*otelPipeline, error) {
	o := d.Options().OTel
	if o.Exporter != "otlp" || o.SDKDisabled {
		return nil, nil
	}
	var headers http.Header
	if o.Headers != "" {
		r, err := d.Resolver(authority.ResolverOptions{LookupEnv: lookupEnv})
		if err != nil {
			return nil, err
		}
		sec, err := r.Resolve(ctx, o.Headers, authority.ConsumerOTelHeaders, o.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("otel.headers: %w", err)
		}
		if headers, err = parseOTLPHeaders(sec.Reveal()); err != nil {
			// The message names the problem, never the value.
			return nil, fmt.Errorf("otel.headers credential %q: %w", o.Headers, err)
		}
	}
	sampler, err := otelSampler(o.Sampler, o.SamplerArg)
	if err != nil {
		return nil, err
	}
	exp, err := otlp.New(otlp.Options{
		Endpoint:  o.Endpoint,
		Headers:   headers,
		Gzip:      o.Compression == "gzip",
		Timeout:   time.Duration(o.TimeoutMS) * time.Millisecond,
		Resource:  otelResource(o.ServiceName, o.ResourceAttributes),
		UserAgent: "pablo/" + Version,
	})
	if err != nil {
		return nil, err
	}
	bsp := sdktrace.NewBatchSpanProcessor(exp,
		sdktrace.WithMaxQueueSize(int(o.MaxQueueSize)),
		sdktrace.WithMaxExportBatchSize(int(o.MaxExportBatchSize)),
		sdktrace.WithBatchTimeout(time.Duration(o.ScheduleDelayMS)*time.Millisecond),
		sdktrace.WithExportTimeout(time.Duration(o.ExportTimeoutMS)*time.Millisecond),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sampler),
		// The exporter sends the configured resource; this one only
		// keeps the SDK from building its environment-derived default.
		sdktrace.WithResource(otelResource(o.ServiceName, o.ResourceAttributes)),
		sdktrace.WithSpanProcessor(bsp),
		// Explicit limits, so OTEL_SPAN_* variables have no say.
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   sdktrace.DefaultAttributeValueLengthLimit,
			AttributeValueDepthLimit:    sdktrace.DefaultAttributeValueDepthLimit,
			AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
			EventCountLimit:             sdktrace.DefaultEventCountLimit,
			LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
			AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
			AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
		}),
	)
	return &otelPipeline{tp: tp, tracer: tp.Tracer(otelScope, trace.WithInstrumentationVersion(Version), trace.WithSchemaURL(otelSchemaURL))}, nil
}

// Tracer returns the tracer for HostOptions.Tracer (nil for a nil
// pipeline, which means no spans).
func (p *otelPipeline) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Shutdown flushes queued spans and stops the exporter within the fixed
// two-second bound.
func (p *otelPipeline) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), otelShutdown)
	defer cancel()
	return p.tp.Shutdown(ctx)
}

// otelResource is service.name, the configured resource attributes and
// service.version, which the executable fixes.
func otelResource(serviceName string, resource map[string]string) *sdkresource.Resource {
	keys := make([]string, 0, len(resource))
	for k := range resource {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]attribute.KeyValue, 0, len(keys)+2)
	for _, k := range keys {
		if k == "service.name" || k == "service.version" {
			continue
		}
		attrs = append(attrs, attribute.String(k, resource[k]))
	}
	attrs = append(attrs, attribute.String("service.name", serviceName), attribute.String("service.version", Version))
	return sdkresource.NewWithAttributes(otelSchemaURL, attrs...)
}

// otelSampler maps options.otel.sampler and sampler_arg.
func otelSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, fmt.Errorf("otel.sampler_arg %q must be a decimal 0..1", arg)
		}
		return f, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		f, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.TraceIDRatioBased(f), nil
	case "parentbased_traceidratio":
		f, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(f)), nil
	}
	return nil, fmt.Errorf("otel.sampler %q is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
}

// errOTLPHeaders is the kind of every malformed headers credential.
var errOTLPHeaders = errors.New("malformed OTLP headers")

// parseOTLPHeaders reads the headers credential: comma-separated
// name=value pairs (the OTEL_EXPORTER_OTLP_HEADERS form), each name and
// value percent-decoded once. Duplicate names, routing and framing
// headers, and anything that is not a valid header are refused. Errors
// never quote a value.
func parseOTLPHeaders(s string) (http.Header, error) {
	out := http.Header{}
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: the credential holds no header", errOTLPHeaders)
	}
	for i, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("%w: entry %d is not name=value", errOTLPHeaders, i+1)
		}
		name, err1 := url.PathUnescape(strings.TrimSpace(k))
		value, err2 := url.PathUnescape(strings.TrimSpace(v))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: entry %d has a bad percent escape", errOTLPHeaders, i+1)
		}
		if !validHeaderName(name) {
			return nil, fmt.Errorf("%w: entry %d does not name a valid header", errOTLPHeaders, i+1)
		}
		if !validHeaderValue(value) {
			return nil, fmt.Errorf("%w: the value of header %q holds a control byte", errOTLPHeaders, name)
		}
		canon := http.CanonicalHeaderKey(name)
		if reservedOTLPHeader(canon) {
			return nil, fmt.Errorf("%w: header %q is set by the exporter and cannot be configured", errOTLPHeaders, canon)
		}
		if _, dup := out[canon]; dup {
			return nil, fmt.Errorf("%w: header %q is given twice", errOTLPHeaders, canon)
		}
		out[canon] = []string{value}
	}
	return out, nil
}

func reservedOTLPHeader(canon string) bool {
	switch canon {
	case "Host", "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding", "Connection", "Keep-Alive",
		"Te", "Trailer", "Upgrade", "Proxy-Authorization", "Proxy-Connection", "Forwarded", "Via", "Traceparent", "Tracestate", "Baggage":
		return true
	}
	return strings.HasPrefix(canon, "X-Forwarded-")
}

func validHeaderName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	if len(s) > 8192 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
