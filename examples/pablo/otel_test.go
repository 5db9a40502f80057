package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/otlp"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is a loopback OTLP/HTTP receiver. It decodes each request body
// with the official protos (TracesData is wire-identical to
// ExportTraceServiceRequest) and keeps the requests.
type receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	reqs    []*tracepb.TracesData
	headers []http.Header
	bodies  [][]byte
	status  int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				w.WriteHeader(400)
				return
			}
			body, _ = io.ReadAll(zr)
		}
		var td tracepb.TracesData
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &td) != nil {
			w.WriteHeader(400)
			return
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, &td)
		r.headers = append(r.headers, req.Header.Clone())
		r.bodies = append(r.bodies, body)
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, td := range r.reqs {
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// TestOTLPEncodingDecodesWithTheOfficialProtos checks the hand-written
// wire encoding field by field against the official OTLP messages.
func TestOTLPEncodingDecodesWithTheOfficialProtos(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	exp, err := otlp.New(otlp.Options{Endpoint: rcv.srv.URL + "/v1/traces", Gzip: true})
	if err != nil {
		t.Fatal(err)
	}
	res := sdkresource.NewWithAttributes(otelSchemaURL, attribute.String("service.name", "svc"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	tr := tp.Tracer("pablo", trace.WithInstrumentationVersion("9.9"), trace.WithSchemaURL(otelSchemaURL))
	ctx, parent := tr.Start(context.Background(), "invoke_agent", trace.WithSpanKind(trace.SpanKindInternal))
	linked := parent.SpanContext()
	_, child := tr.Start(ctx, "chat", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.Int("l", 1)}}))
	child.SetAttributes(
		attribute.String("s", "text"), attribute.String("empty", ""), attribute.Bool("f", false), attribute.Bool("t", true),
		attribute.Int64("neg", -5), attribute.Int64("zero", 0), attribute.Float64("pi", 3.25),
		attribute.StringSlice("ss", []string{"a", ""}), attribute.Int64Slice("is", []int64{1, -2}),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Float64Slice("fs", []float64{0.5}),
	)
	child.AddEvent("retry", trace.WithAttributes(attribute.String("why", "503")))
	child.SetStatus(codes.Error, "model call failed")
	child.End()
	parent.SetStatus(codes.Ok, "")
	parent.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	reqs := rcv.reqs
	rcv.mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	rs := reqs[0].ResourceSpans[0]
	if rs.SchemaUrl != otelSchemaURL || rs.Resource.Attributes[0].Key != "service.name" || rs.Resource.Attributes[0].Value.GetStringValue() != "svc" {
		t.Fatalf("resource %v", rs)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "pablo" || ss.Scope.Version != "9.9" || ss.SchemaUrl != otelSchemaURL {
		t.Fatalf("scope %v", ss.Scope)
	}
	c := ss.Spans[0]
	p := reqs[1].ResourceSpans[0].ScopeSpans[0].Spans[0]
	if c.Name != "chat" || c.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Fatalf("names/kinds: %v %v", c, p)
	}
	if !bytes.Equal(c.TraceId, p.TraceId) || !bytes.Equal(c.ParentSpanId, p.SpanId) || len(p.ParentSpanId) != 0 || len(c.SpanId) != 8 || len(c.TraceId) != 16 {
		t.Fatalf("IDs: child %x/%x parent %x/%x", c.TraceId, c.ParentSpanId, p.TraceId, p.SpanId)
	}
	if c.StartTimeUnixNano == 0 || c.EndTimeUnixNano < c.StartTimeUnixNano || c.Flags != 0x101 {
		t.Fatalf("times/flags: %d %d %#x", c.StartTimeUnixNano, c.EndTimeUnixNano, c.Flags)
	}
	if c.Status.Code != tracepb.Status_STATUS_CODE_ERROR || c.Status.Message != "model call failed" || p.Status.Code != tracepb.Status_STATUS_CODE_OK {
		t.Fatalf("status: %v %v", c.Status, p.Status)
	}
	got := map[string]string{}
	for _, kv := range c.Attributes {
		got[kv.Key] = kv.Value.String()
	}
	checks := map[string]func(string) bool{
		"s":     func(s string) bool { return strings.Contains(s, `string_value:"text"`) },
		"empty": func(s string) bool { return strings.Contains(s, `string_value:""`) },
		"f":     func(s string) bool { return strings.Contains(s, `bool_value:false`) },
		"t":     func(s string) bool { return strings.Contains(s, `bool_value:true`) },
		"neg":   func(s string) bool { return strings.Contains(s, `int_value:-5`) },
		"zero":  func(s string) bool { return strings.Contains(s, `int_value:0`) },
		"pi":    func(s string) bool { return strings.Contains(s, `double_value:3.25`) },
		"ss":    func(s string) bool { return strings.Contains(s, `"a"`) && strings.Count(s, "string_value") == 2 },
		"is":    func(s string) bool { return strings.Contains(s, "int_value:1") && strings.Contains(s, "int_value:-2") },
		"bs": func(s string) bool {
			return strings.Contains(s, "bool_value:true") && strings.Contains(s, "bool_value:false")
		},
		"fs": func(s string) bool { return strings.Contains(s, "double_value:0.5") },
	}
	for k, ok := range checks {
		if v, present := got[k]; !present || !ok(strings.ReplaceAll(v, "  ", " ")) {
			t.Errorf("attribute %s = %q", k, v)
		}
	}
	if len(c.Events) != 1 || c.Events[0].Name != "retry" || c.Events[0].Attributes[0].Value.GetStringValue() != "503" || c.Events[0].TimeUnixNano == 0 {
		t.Fatalf("events %v", c.Events)
	}
	if len(c.Links) != 1 || !bytes.Equal(c.Links[0].SpanId, p.SpanId) || c.Links[0].Attributes[0].Value.GetIntValue() != 1 {
		t.Fatalf("links %v", c.Links)
	}
}

func TestOTLPExporterRefusesRedirectsAndReportsStatusOnly(t *testing.T) {
	t.Parallel()
	var followed bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed = true }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/v1/traces", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	for _, c := range []struct {
		name, url string
		status    int
	}{{"RedirectIsNeverFollowed", redirect.URL + "/v1/traces", 307}} {
		t.Run(c.name, func(t *testing.T) {
			exp, _ := otlp.New(otlp.Options{Endpoint: c.url, Headers: http.Header{"X-Api-Key": {"otel-secret-value"}}})
			got := exp.ExportSpans(context.Background(), nil) // empty: nothing sent
			if got != nil {
				t.Fatal(got)
			}
			ro := captureSpan(t)
			got = exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{ro})
			if !errors.Is(got, otlp.ErrExport) || !strings.Contains(got.Error(), "HTTP 307") || strings.Contains(got.Error(), "otel-secret-value") {
				t.Fatalf("err = %v", got)
			}
			if followed {
				t.Fatal("the redirect was followed")
			}
		})
	}
}

func captureSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	var got sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder(func(s sdktrace.ReadOnlySpan) { got = s })))
	_, s := tp.Tracer("t").Start(context.Background(), "x")
	s.End()
	return got
}

type recorder func(sdktrace.ReadOnlySpan)

func (r recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r recorder) OnEnd(s sdktrace.ReadOnlySpan)                   { r(s) }
func (r recorder) Shutdown(context.Context) error                  { return nil }
func (r recorder) ForceFlush(context.Context) error                { return nil }

// otelDeployment writes a scripted deployment that exports spans to rcv.
func otelDeployment(t *testing.T, rcv *receiver, extra string) (cfg, ws string) {
	t.Helper()
	dir := t.TempDir()
	ws = filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("INV-1042 paid\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["Reading."],"tool_calls":[{"name":"fs_read","arguments":{"path":"evidence.md"}}]},{"text":["Paid."]}]}`), 0o600)
	cfg = filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[credentials.otel]
consumer = "otel.headers"
sources = [{ kind = "environment", name = "OTEL_TOKEN" }]
[options.model]
provider = "script"
script = { base = "source", path = "script.json" }
[options.shell]
enabled = false
[options.otel]
exporter = "otlp"
endpoint = "`+rcv.srv.URL+`/v1/traces"
headers = "otel"
compression = "gzip"
service_name = "pablo-test"
resource_attributes = { "deployment.environment" = "test", "service.version" = "spoofed" }
schedule_delay_ms = 10
`+extra), 0o600)
	return cfg, ws
}

func runWithEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	h := &host{stdout: &out, stderr: &errb, lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, workDir: t.TempDir()}
	code := run(context.Background(), args, h)
	return code, out.String(), errb.String()
}

// TestRunExportsSpansFromTheDeployment runs a task through the CLI: its
// spans reach the configured receiver with the credential header, the
// resource carries the service identity, and the secret is in no span.
func TestRunExportsSpansFromTheDeployment(t *testing.T) {
	rcv := newReceiver(t)
	cfg, ws := otelDeployment(t, rcv, "")
	secret := "otel-secret-token-123"
	code, out, errs := runWithEnv(t, map[string]string{"OTEL_TOKEN": "x-api-key=" + secret + ",x-tenant=t%2C1"}, "run", "What was paid?", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	spans := rcv.spans()
	names := map[string]int{}
	for _, s := range spans {
		name := s.Name
		if strings.HasPrefix(name, "chat ") {
			// The GenAI conventions name a model span "chat {model}".
			name = "chat"
		}
		names[name]++
	}
	if names["invoke_agent"] != 1 || names["chat"] != 2 {
		t.Fatalf("spans %v", names)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for i, hdr := range rcv.headers {
		if hdr.Get("X-Api-Key") != secret || hdr.Get("X-Tenant") != "t,1" || hdr.Get("Content-Encoding") != "gzip" {
			t.Fatalf("request %d headers %v", i, hdr)
		}
		if bytes.Contains(rcv.bodies[i], []byte(secret)) {
			t.Fatal("the credential reached a span")
		}
	}
	attrs := map[string]string{}
	for _, kv := range rcv.reqs[0].ResourceSpans[0].Resource.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["service.name"] != "pablo-test" || attrs["service.version"] != Version || attrs["deployment.environment"] != "test" {
		t.Fatalf("resource %v", attrs)
	}
	if strings.Contains(out+errs, secret) {
		t.Fatal("the credential was printed")
	}
}

// TestConfiguredOTelIgnoresAmbientEnvironment sets every OTEL_* variable
// that could redirect, silence or decorate the export; none has any say.
func TestConfiguredOTelIgnoresAmbientEnvironment(t *testing.T) {
	rcv := newReceiver(t)
	decoy := newReceiver(t)
	for k, v := range map[string]string{
		"OTEL_SDK_DISABLED":                  "true",
		"OTEL_TRACES_EXPORTER":               "none",
		"OTEL_EXPORTER_OTLP_ENDPOINT":        decoy.srv.URL,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": decoy.srv.URL + "/v1/traces",
		"OTEL_EXPORTER_OTLP_HEADERS":         "x-leak=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "x-leak=1",
		"OTEL_TRACES_SAMPLER":                "always_off",
		"OTEL_RESOURCE_ATTRIBUTES":           "leak=1",
		"OTEL_SERVICE_NAME":                  "leaked",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE":     "1",
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT":    "0",
		"HTTP_PROXY":                         decoy.srv.URL,
	} {
		t.Setenv(k, v)
	}
	cfg, ws := otelDeployment(t, rcv, "")
	code, out, errs := runWithEnv(t, map[string]string{"OTEL_TOKEN": "x-api-key=k-123456"}, "run", "What was paid?", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	spans := rcv.spans()
	if len(spans) < 3 || len(decoy.spans()) != 0 {
		t.Fatalf("%d spans at the receiver, %d at the decoy", len(spans), len(decoy.spans()))
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, hdr := range rcv.headers {
		if hdr.Get("X-Leak") != "" {
			t.Fatal("an ambient header was sent")
		}
	}
	for _, td := range rcv.reqs {
		for _, kv := range td.ResourceSpans[0].Resource.Attributes {
			if kv.Key == "leak" || kv.Value.GetStringValue() == "leaked" {
				t.Fatalf("an ambient resource attribute: %v", kv)
			}
		}
	}
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "chat ") {
			continue
		}
		if len(s.Attributes) == 0 {
			t.Fatal("an ambient span limit applied")
		}
		// The GenAI attributes of a model span.
		keys := map[string]bool{}
		for _, kv := range s.Attributes {
			keys[kv.Key] = true
		}
		for _, k := range []string{"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.finish_reasons"} {
			if !keys[k] {
				t.Fatalf("span %s lacks %s: %v", s.Name, k, s.Attributes)
			}
		}
	}
}

func TestOTelSetupFailures(t *testing.T) {
	rcv := newReceiver(t)
	for _, c := range []struct {
		name  string
		env   map[string]string
		extra string
		code  string
	}{
		{"MissingCredentialIsCredentialUnavailable", nil, "", "credential_unavailable"},
		{"MalformedHeadersAreInvalidConfiguration", map[string]string{"OTEL_TOKEN": "no-equals-sign-secret"}, "", "invalid_configuration"},
		{"RoutingHeaderIsRefused", map[string]string{"OTEL_TOKEN": "host=evil.example"}, "", "invalid_configuration"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, ws := otelDeployment(t, rcv, c.extra)
			code, out, errs := runWithEnv(t, c.env, "run", "x", "--json", "--config", cfg, "--bind", "workspace="+ws)
			if code != 2 || !strings.Contains(out, `"code":"`+c.code+`"`) {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			if strings.Contains(out+errs, "no-equals-sign-secret") {
				t.Fatal("the credential value was printed")
			}
		})
	}
}

func TestOTelOffBuildsNoPipeline(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	for _, extra := range []string{"sdk_disabled = true\n"} {
		cfg, ws := otelDeployment(t, rcv, extra)
		code, out, errs := runWithEnv(t, map[string]string{"OTEL_TOKEN": "a=b"}, "run", "x", "--config", cfg, "--bind", "workspace="+ws)
		if code != 0 || len(rcv.spans()) != 0 {
			t.Fatalf("exit %d, %d spans: %s %s", code, len(rcv.spans()), out, errs)
		}
	}
}

func TestParseOTLPHeaders(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in string
		want     map[string]string
	}{
		{"PairsArePercentDecodedOnce", "api-key=a%2Cb%253D,x-b=c", map[string]string{"Api-Key": "a,b%3D", "X-B": "c"}},
		{"SpacesAroundAreTrimmed", " k = v ", map[string]string{"K": "v"}},
		{"EmptyValueIsKept", "k=", map[string]string{"K": ""}},
		{"DuplicateNamesAreRefused", "k=1,K=2", nil},
		{"RoutingHeaderIsRefused", "Host=x", nil},
		{"ForwardedHeaderIsRefused", "x-forwarded-for=1.2.3.4", nil},
		{"ContentTypeIsRefused", "content-type=text/plain", nil},
		{"MissingEqualsIsRefused", "secretvalue", nil},
		{"EmptyIsRefused", " ", nil},
		{"ControlByteIsRefused", "k=a%0Db", nil},
		{"BadEscapeIsRefused", "k=%zz", nil},
		{"BadNameIsRefused", "k k=v", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseOTLPHeaders(c.in)
			if c.want == nil {
				if !errors.Is(err, errOTLPHeaders) {
					t.Fatalf("got %v, %v", got, err)
				}
				if strings.Contains(err.Error(), "secretvalue") || strings.Contains(err.Error(), "a\rb") {
					t.Fatalf("the error quotes a value: %v", err)
				}
				return
			}
			if err != nil || len(got) != len(c.want) {
				t.Fatalf("got %v, %v", got, err)
			}
			for k, v := range c.want {
				if got.Get(k) != v {
					t.Fatalf("%s = %q, want %q", k, got.Get(k), v)
				}
			}
		})
	}
}

func FuzzParseOTLPHeaders(f *testing.F) {
	f.Add("api-key=a%2Cb,x=y")
	f.Add("k=1,K=2")
	f.Add("=%")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseOTLPHeaders(s)
		if err != nil {
			return
		}
		for k, vs := range h {
			if len(vs) != 1 || !validHeaderName(k) || !validHeaderValue(vs[0]) || reservedOTLPHeader(k) {
				t.Fatalf("accepted %q: %q", k, vs)
			}
		}
	})
}

func TestOTelSampler(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, sampler, arg, desc string
	}{
		{"DefaultIsParentBasedAlwaysOn", "parentbased_always_on", "1", "ParentBased{root:AlwaysOnSampler"},
		{"AlwaysOff", "always_off", "1", "AlwaysOffSampler"},
		{"Ratio", "traceidratio", "0.25", "TraceIDRatioBased{0.25}"},
		{"ParentBasedRatio", "parentbased_traceidratio", "0.5", "ParentBased{root:TraceIDRatioBased{0.5}"},
		{"RatioOnePastTheRangeIsRefused", "traceidratio", "1.5", ""},
		{"UnknownIsRefused", "jaeger_remote", "1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := otelSampler(c.sampler, c.arg)
			if c.desc == "" {
				if err == nil {
					t.Fatalf("accepted %s", s.Description())
				}
				return
			}
			if err != nil || !strings.HasPrefix(s.Description(), c.desc) {
				t.Fatalf("%v %v", s, err)
			}
		})
	}
}

// TestOTLPRequiresHTTPSOutsideLoopback: the OTLP exporter, which carries
// the otel.headers credential, accepts plain HTTP only to a loopback host,
// as every other remote endpoint does; the deployment is refused at load
// (config_invalid_value, exit 2) and the exporter refuses on its own.
func TestOTLPRequiresHTTPSOutsideLoopback(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		endpoint string
		ok       bool
	}{
		{"http://collector.example.test:4318/v1/traces", false},
		{"http://203.0.113.7:4318/v1/traces", false},
		{"http://localhost:4318/v1/traces", true},
		{"http://127.0.0.1:4318/v1/traces", true},
		{"http://[::1]:4318/v1/traces", true},
		{"https://collector.example.test/v1/traces", true},
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "d.toml")
			os.WriteFile(cfg, []byte(`schema_version = 1
[credentials.otel]
consumer = "otel.headers"
sources = [{ kind = "environment", name = "OTEL_TOKEN" }]
[options.otel]
exporter = "otlp"
endpoint = "`+c.endpoint+`"
headers = "otel"
`), 0o600)
			code, _, stderr := runWithEnv(t, map[string]string{"OTEL_TOKEN": "x-api-key=otel-secret-value"}, "config", "validate", "--config", cfg, "--bind", "workspace="+dir)
			if c.ok != (code == 0) {
				t.Fatalf("config validate: exit %d, stderr %s", code, stderr)
			}
			if !c.ok && (code != 2 || !strings.Contains(stderr, "config_invalid_value") || !strings.Contains(stderr, "/options/otel/endpoint")) {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			_, err := otlp.New(otlp.Options{Endpoint: c.endpoint, Headers: http.Header{"X-Api-Key": {"otel-secret-value"}}})
			if c.ok != (err == nil) {
				t.Fatalf("exporter: %v", err)
			}
			if err != nil && !errors.Is(err, otlp.ErrPlainHTTP) {
				t.Fatalf("exporter error kind: %v", err)
			}
		})
	}
}

// TestOTelBatchSettingsShapeTheExports: options.otel.max_export_batch_size
// bounds the spans of each export request (1: one request per span), and
// options.otel.schedule_delay_ms holds spans back until the delay or the
// final flush (a minute's delay: the run's spans leave together, in the
// one request its shutdown sends).
func TestOTelBatchSettingsShapeTheExports(t *testing.T) {
	for _, c := range []struct {
		name     string
		settings string
		oneEach  bool // one span per request; else every span in one
	}{
		{"BatchOfOne", "schedule_delay_ms = 10\nmax_export_batch_size = 1\nmax_queue_size = 64\n", true},
		{"DelayPastTheRun", "schedule_delay_ms = 60000\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rcv := newReceiver(t)
			cfg, ws := otelDeployment(t, rcv, "")
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, bytes.Replace(b, []byte("schedule_delay_ms = 10\n"), []byte(c.settings), 1), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runWithEnv(t, map[string]string{"OTEL_TOKEN": "x-api-key=k"}, "run", "What was paid?", "--config", cfg, "--bind", "workspace="+ws)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			var spans []int
			total := 0
			for _, r := range rcv.reqs {
				n := 0
				for _, rs := range r.ResourceSpans {
					for _, ss := range rs.ScopeSpans {
						n += len(ss.Spans)
					}
				}
				spans = append(spans, n)
				total += n
			}
			ok := total >= 3 && len(spans) == 1
			if c.oneEach {
				ok = total >= 3 && !slices.ContainsFunc(spans, func(n int) bool { return n != 1 })
			}
			if !ok {
				t.Fatalf("spans per export request %v", spans)
			}
		})
	}
}
