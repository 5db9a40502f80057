// Package otlp is a small OTLP/HTTP (http/protobuf) span exporter for the
// OpenTelemetry SDK: an [Exporter] posts finished spans to a receiver's
// traces URL. A host that exports its tasks' spans (the reference CLI does,
// from options.otel) uses it instead of otlptracehttp for what it leaves
// out and what it refuses:
//
//   - it links no gRPC, grpc-gateway or protobuf runtime (≈10 MB and
//     ≈1.5 ms of package initialisation on every start), writing the wire
//     format of ExportTraceServiceRequest by hand;
//   - it reads no OTEL_EXPORTER_OTLP_* variable: every setting is the
//     caller's;
//   - it carries a credential (the headers), so it sends it only over HTTPS,
//     or plain HTTP to a loopback host, never follows a redirect, never
//     uses a proxy, never retries and never reads an error body.
//
// Its tests decode its output with the official OTLP protos.
package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/internal/endpoint"
	"github.com/pabloagent/pablo/internal/httpx"
)

// Options configure an [Exporter].
type Options struct {
	// Endpoint is the complete traces URL.
	Endpoint string
	// Headers are added to every request (the resolved credential).
	Headers http.Header
	// Gzip compresses request bodies.
	Gzip bool
	// Timeout bounds one export request.
	Timeout time.Duration
	// Resource, when set, is the resource of every exported span. The SDK
	// merges OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME into a tracer
	// provider's resource whatever the options say, so a configured
	// deployment sends its own resource instead.
	Resource *sdkresource.Resource
	// UserAgent is every request's User-Agent (empty: "pablo").
	UserAgent string
}

// Exporter posts finished spans to an OTLP/HTTP receiver; it implements
// sdktrace.SpanExporter. It never follows a redirect, never uses a proxy,
// never retries and never reads an error body. It is safe for concurrent
// use.
type Exporter struct {
	opts   Options
	client *http.Client

	mu     sync.Mutex
	closed bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// ErrPlainHTTP is the kind of the error [New] returns for a plain-HTTP
// endpoint that is not a loopback host: the exporter holds the headers
// credential, so it admits HTTPS, or HTTP to loopback only.
var ErrPlainHTTP = endpoint.ErrPlainHTTP

// New returns an exporter that posts to opts.Endpoint. It refuses an
// endpoint that is not a complete http(s) URL, that carries userinfo, or
// that is plain HTTP to a host other than loopback (errors.Is(err,
// ErrPlainHTTP)).
func New(opts Options) (*Exporter, error) {
	u, err := url.Parse(opts.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("otel.endpoint must be a complete http(s) traces URL without userinfo")
	}
	// The deployment's check refuses the same; the exporter holds the
	// headers credential, so it never trusts that it was asked.
	if err := endpoint.CheckScheme(u, true); err != nil {
		return nil, fmt.Errorf("otel.endpoint %s: %w; plain http is allowed only to a loopback host", u.Redacted(), err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	// No ambient proxy, no redirect followed (a 3xx is a failed export),
	// HTTP/1.1, the exchange bounded by the timeout.
	return &Exporter{opts: opts, client: httpx.New(httpx.Options{
		ConnectTimeout:      opts.Timeout,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		Timeout:             opts.Timeout,
		MaxBodyBytes:        64 << 10,
	})}, nil
}

// ErrExport is the kind of every failed export: errors.Is(err, ErrExport).
// Its message names the endpoint and the receiver's HTTP status, never a
// header or a body.
var ErrExport = errors.New("OTLP export failed")

// ExportSpans implements sdktrace.SpanExporter.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed || len(spans) == 0 {
		return nil
	}
	body := encodeTraceRequest(spans, e.opts.Resource)
	if e.opts.Gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.opts.Endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExport, err)
	}
	for k, v := range e.opts.Headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	ua := e.opts.UserAgent
	if ua == "" {
		ua = "pablo"
	}
	req.Header.Set("User-Agent", ua)
	if e.opts.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// The URL error names the endpoint, which holds no credential.
		return fmt.Errorf("%w: %v", ErrExport, err)
	}
	httpx.Drain(resp, 64<<10)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: the receiver answered HTTP %d", ErrExport, resp.StatusCode)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return ctx.Err()
}

// The OTLP protobuf wire format, field by field (opentelemetry-proto
// v1: collector/trace/v1, trace/v1, common/v1, resource/v1).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

type pb struct{ b []byte }

func (p *pb) tag(field, wire int) { p.b = binary.AppendUvarint(p.b, uint64(field)<<3|uint64(wire)) }

func (p *pb) bytesField(field int, v []byte) {
	p.tag(field, wireBytes)
	p.b = binary.AppendUvarint(p.b, uint64(len(v)))
	p.b = append(p.b, v...)
}

// str writes a string field; an empty proto3 string is omitted.
func (p *pb) str(field int, s string) {
	if s == "" {
		return
	}
	p.tag(field, wireBytes)
	p.b = binary.AppendUvarint(p.b, uint64(len(s)))
	p.b = append(p.b, s...)
}

func (p *pb) uvarint(field int, v uint64) {
	if v == 0 {
		return
	}
	p.tag(field, wireVarint)
	p.b = binary.AppendUvarint(p.b, v)
}

func (p *pb) fixed64(field int, v uint64) {
	if v == 0 {
		return
	}
	p.tag(field, wireFixed64)
	p.b = binary.LittleEndian.AppendUint64(p.b, v)
}

func (p *pb) fixed32(field int, v uint32) {
	if v == 0 {
		return
	}
	p.tag(field, wireFixed32)
	p.b = binary.LittleEndian.AppendUint32(p.b, v)
}

// msg writes a nested message (always present, even when empty). The
// message is written in place, after its tag, and its length is put in
// front of it once known: one buffer for the whole request instead of one
// per nested message.
func (p *pb) msg(field int, fill func(*pb)) {
	p.tag(field, wireBytes)
	start := len(p.b)
	fill(p)
	n := len(p.b) - start
	var lb [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(lb[:], uint64(n))
	p.b = append(p.b, lb[:l]...)
	copy(p.b[start+l:], p.b[start:start+n])
	copy(p.b[start:], lb[:l])
}

// encodeTraceRequest renders an ExportTraceServiceRequest: spans grouped
// by resource (or all under res, when set), then by instrumentation scope,
// in first-seen order.
func encodeTraceRequest(spans []sdktrace.ReadOnlySpan, res *sdkresource.Resource) []byte {
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resGroup struct {
		res    *sdkresource.Resource
		scopes []*scopeGroup
	}
	var groups []*resGroup
	for _, s := range spans {
		sres := s.Resource()
		if res != nil {
			sres = res
		}
		var g *resGroup
		for _, have := range groups {
			if have.res == sres || have.res.Equal(sres) {
				g = have
				break
			}
		}
		if g == nil {
			g = &resGroup{res: sres}
			groups = append(groups, g)
		}
		var sg *scopeGroup
		for _, have := range g.scopes {
			if have.scope.Name == s.InstrumentationScope().Name && have.scope.Version == s.InstrumentationScope().Version &&
				have.scope.SchemaURL == s.InstrumentationScope().SchemaURL {
				sg = have
				break
			}
		}
		if sg == nil {
			sg = &scopeGroup{scope: s.InstrumentationScope()}
			g.scopes = append(g.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	var out pb
	for _, g := range groups {
		out.msg(1, func(rs *pb) { // ResourceSpans
			rs.msg(1, func(r *pb) { // Resource
				if g.res != nil {
					for _, kv := range g.res.Attributes() {
						r.msg(1, func(p *pb) { encodeKeyValue(p, kv) })
					}
				}
			})
			for _, sg := range g.scopes {
				rs.msg(2, func(ss *pb) { // ScopeSpans
					ss.msg(1, func(sc *pb) { // InstrumentationScope
						sc.str(1, sg.scope.Name)
						sc.str(2, sg.scope.Version)
						for _, kv := range sg.scope.Attributes.ToSlice() {
							sc.msg(3, func(p *pb) { encodeKeyValue(p, kv) })
						}
					})
					for _, s := range sg.spans {
						ss.msg(2, func(p *pb) { encodeSpan(p, s) })
					}
					ss.str(3, sg.scope.SchemaURL)
				})
			}
			if g.res != nil {
				rs.str(3, g.res.SchemaURL())
			}
		})
	}
	return out.b
}

// Span flags: the W3C trace flags in the low byte, then "has is_remote"
// and "is_remote" for the parent.
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

func encodeSpan(p *pb, s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p.bytesField(1, tid[:])
	p.bytesField(2, sid[:])
	p.str(3, sc.TraceState().String())
	if parent := s.Parent(); parent.SpanID().IsValid() {
		psid := parent.SpanID()
		p.bytesField(4, psid[:])
	}
	p.str(5, s.Name())
	p.uvarint(6, uint64(spanKind(s.SpanKind())))
	p.fixed64(7, unixNano(s.StartTime()))
	p.fixed64(8, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		p.msg(9, func(q *pb) { encodeKeyValue(q, kv) })
	}
	p.uvarint(10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		p.msg(11, func(q *pb) {
			q.fixed64(1, unixNano(ev.Time))
			q.str(2, ev.Name)
			for _, kv := range ev.Attributes {
				q.msg(3, func(r *pb) { encodeKeyValue(r, kv) })
			}
			q.uvarint(4, uint64(ev.DroppedAttributeCount))
		})
	}
	p.uvarint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		p.msg(13, func(q *pb) {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			q.bytesField(1, ltid[:])
			q.bytesField(2, lsid[:])
			q.str(3, l.SpanContext.TraceState().String())
			for _, kv := range l.Attributes {
				q.msg(4, func(r *pb) { encodeKeyValue(r, kv) })
			}
			q.uvarint(5, uint64(l.DroppedAttributeCount))
			flags := uint32(l.SpanContext.TraceFlags()) | spanFlagsHasIsRemote
			if l.SpanContext.IsRemote() {
				flags |= spanFlagsIsRemote
			}
			q.fixed32(6, flags)
		})
	}
	p.uvarint(14, uint64(s.DroppedLinks()))
	st := s.Status()
	if st.Code != codes.Unset || st.Description != "" {
		p.msg(15, func(q *pb) {
			q.str(2, st.Description)
			q.uvarint(3, uint64(statusCode(st.Code)))
		})
	}
	flags := uint32(sc.TraceFlags()) | spanFlagsHasIsRemote
	if s.Parent().IsRemote() {
		flags |= spanFlagsIsRemote
	}
	p.fixed32(16, flags)
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return uint64(t.UnixNano())
}

// spanKind maps to the OTLP enum (SPAN_KIND_INTERNAL = 1 ... CONSUMER = 5;
// the Go API uses the same numbers, unspecified stays 0).
func spanKind(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return 0
	}
	return int(k)
}

// statusCode maps codes (Unset 0, Error 1, Ok 2) to the OTLP enum
// (UNSET 0, OK 1, ERROR 2).
func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

func encodeKeyValue(p *pb, kv attribute.KeyValue) {
	p.str(1, string(kv.Key))
	p.msg(2, func(q *pb) { encodeAnyValue(q, kv.Value) })
}

// encodeAnyValue writes the oneof of an AnyValue; a present member is
// written even when it holds its zero value.
func encodeAnyValue(p *pb, v attribute.Value) {
	strv := func(s string) {
		p.tag(1, wireBytes)
		p.b = binary.AppendUvarint(p.b, uint64(len(s)))
		p.b = append(p.b, s...)
	}
	boolv := func(b bool) {
		p.tag(2, wireVarint)
		if b {
			p.b = append(p.b, 1)
		} else {
			p.b = append(p.b, 0)
		}
	}
	intv := func(n int64) {
		p.tag(3, wireVarint)
		p.b = binary.AppendUvarint(p.b, uint64(n))
	}
	floatv := func(f float64) {
		p.tag(4, wireFixed64)
		p.b = binary.LittleEndian.AppendUint64(p.b, math.Float64bits(f))
	}
	array := func(n int, item func(i int, q *pb)) {
		p.msg(5, func(arr *pb) {
			for i := 0; i < n; i++ {
				arr.msg(1, func(q *pb) { item(i, q) })
			}
		})
	}
	switch v.Type() {
	case attribute.BOOL:
		boolv(v.AsBool())
	case attribute.INT64:
		intv(v.AsInt64())
	case attribute.FLOAT64:
		floatv(v.AsFloat64())
	case attribute.STRING:
		strv(v.AsString())
	case attribute.BOOLSLICE:
		s := v.AsBoolSlice()
		array(len(s), func(i int, q *pb) { encodeAnyValue(q, attribute.BoolValue(s[i])) })
	case attribute.INT64SLICE:
		s := v.AsInt64Slice()
		array(len(s), func(i int, q *pb) { encodeAnyValue(q, attribute.Int64Value(s[i])) })
	case attribute.FLOAT64SLICE:
		s := v.AsFloat64Slice()
		array(len(s), func(i int, q *pb) { encodeAnyValue(q, attribute.Float64Value(s[i])) })
	case attribute.STRINGSLICE:
		s := v.AsStringSlice()
		array(len(s), func(i int, q *pb) { encodeAnyValue(q, attribute.StringValue(s[i])) })
	case attribute.BYTESLICE:
		p.bytesField(7, v.AsByteSlice())
	case attribute.SLICE:
		s := v.AsSlice()
		array(len(s), func(i int, q *pb) { encodeAnyValue(q, s[i]) })
	case attribute.MAP:
		m := v.AsMap()
		p.msg(6, func(list *pb) {
			for _, kv := range m {
				list.msg(1, func(q *pb) { encodeKeyValue(q, kv) })
			}
		})
	}
	// EMPTY: an AnyValue with no member set.
}
