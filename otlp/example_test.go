package otlp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pabloagent/pablo/otlp"
)

// Export a task's spans to a receiver: the exporter goes into the SDK's
// batch span processor, and the credential header travels with every
// request.
func ExampleNew() {
	received := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- r.Header.Get("Content-Type") + " " + r.Header.Get("X-Api-Key")
	}))
	defer receiver.Close()

	exp, err := otlp.New(otlp.Options{Endpoint: receiver.URL + "/v1/traces", Headers: http.Header{"X-Api-Key": {"token"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	_, span := tp.Tracer("host").Start(context.Background(), "task")
	span.End()
	tp.Shutdown(context.Background())
	fmt.Println(<-received)

	// The credential never travels in clear text to a host off the machine.
	_, err = otlp.New(otlp.Options{Endpoint: "http://collector.example.test:4318/v1/traces"})
	fmt.Println(errors.Is(err, otlp.ErrPlainHTTP))
	// Output:
	// application/x-protobuf token
	// true
}
