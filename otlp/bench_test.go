package otlp

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// recorder is a span processor that hands each ended span to a function.
type recorder func(sdktrace.ReadOnlySpan)

func (r recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r recorder) OnEnd(s sdktrace.ReadOnlySpan)                   { r(s) }
func (r recorder) Shutdown(context.Context) error                  { return nil }
func (r recorder) ForceFlush(context.Context) error                { return nil }

func BenchmarkOTLPEncode(b *testing.B) {
	var spans []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder(func(s sdktrace.ReadOnlySpan) { spans = append(spans, s) })))
	for range 64 {
		_, s := tp.Tracer("pablo").Start(context.Background(), "chat", trace.WithAttributes(attribute.String("gen_ai.request.model", "m"), attribute.Int("n", 3)))
		s.End()
	}
	b.ReportAllocs()
	for b.Loop() {
		encodeTraceRequest(spans, nil)
	}
}

// BenchmarkOTLPEncodeVsProtobuf is the measured reason for the hand-written
// encoder beside the binary size it saves: the same 64 spans encoded by ours
// from the SDK's spans, and by the official protobuf runtime from the
// decoded request (the same message). The protobuf arm leaves out the
// conversion from the SDK's spans to the generated types that an exporter
// on the official protos also pays, so it is a lower bound of its cost.
//
//	go test -run '^$' -bench 'OTLPEncodeVsProtobuf$' -count 10 ./otlp > otlp.txt
//	benchstat -col /encoder otlp.txt
func BenchmarkOTLPEncodeVsProtobuf(b *testing.B) {
	var spans []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder(func(s sdktrace.ReadOnlySpan) { spans = append(spans, s) })))
	for range 64 {
		_, s := tp.Tracer("pablo").Start(context.Background(), "chat", trace.WithAttributes(attribute.String("gen_ai.request.model", "m"), attribute.Int("n", 3)))
		s.End()
	}
	var msg tracepb.TracesData
	if err := proto.Unmarshal(encodeTraceRequest(spans, nil), &msg); err != nil {
		b.Fatal(err)
	}
	b.Run("encoder=pablo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodeTraceRequest(spans, nil)
		}
	})
	b.Run("encoder=protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := proto.Marshal(&msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
