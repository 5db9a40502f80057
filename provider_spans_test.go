package pablo

import (
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/providertest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A model span carries gen_ai.response.model, the model the provider
// says answered (Anthropic's message model, the Responses API's
// response.model, Gemini's modelVersion), beside the requested model.
func TestModelSpanCarriesTheProvidersResponseModel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		provider, consumer string
		wire               providertest.Wire
		answered           string
	}{
		{"anthropic", "provider.anthropic", providertest.Anthropic, "claude-fixture"},
		{"openai", "provider.openai", providertest.Responses, "gpt-fixture-2025"},
		{"gemini", "provider.gemini", providertest.Gemini, "gemini-fixture"},
	} {
		srv := providertest.New(providertest.Options{Wire: c.wire})
		body := "[credentials.native]\nconsumer = \"" + c.consumer + "\"\nsources = [{ kind = \"environment\", name = \"LOCAL_KEY\" }]\n" +
			"[options.model]\nprovider = \"" + c.provider + "\"\nid = \"requested-id\"\ncredential = \"native\"\nendpoint = \"" + srv.Endpoint() + "\"\n"
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		obj, _ := runProviderTask(t, providerDeployment(t, body, nil), HostOptions{LookupEnv: lookupKey, Tracer: tp.Tracer("test")})
		srv.Close()
		if obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("%s: %s", c.provider, outcomeJSON(obj.Outcome))
		}
		found := false
		for _, s := range rec.Ended() {
			if s.Name() != "chat requested-id" {
				continue
			}
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.AsString()
			}
			if attrs["gen_ai.request.model"] != "requested-id" || attrs["gen_ai.response.model"] != c.answered {
				t.Fatalf("%s: span attributes %v", c.provider, attrs)
			}
			found = true
		}
		if !found {
			t.Fatalf("%s: no chat span", c.provider)
		}
	}
}
