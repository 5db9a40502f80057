package config

import (
	"testing"

	"github.com/pabloagent/pablo/authority"
)

// Each native provider has its credential consumer and a fixed default
// endpoint that a profile's endpoint overrides (a proxy, a compatible
// host); a credential declared for another consumer is refused.
func TestNativeProvidersHaveAConsumerAndADefaultEndpoint(t *testing.T) {
	cases := []struct {
		provider string
		consumer authority.Consumer
		endpoint string
	}{
		{"anthropic", authority.ConsumerAnthropic, AnthropicEndpoint},
		{"openai", authority.ConsumerOpenAI, OpenAIEndpoint},
		{"gemini", authority.ConsumerGemini, GeminiEndpointBase + "m" + GeminiEndpointMethod},
	}
	for _, c := range cases {
		doc := "schema_version = 1\n[options.model]\nprovider = \"" + c.provider + "\"\nid = \"m\"\ncredential = \"k\"\n[credentials.k]\nconsumer = \"" + string(c.consumer) + "\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"
		d, err := loadString(t, doc)
		if err != nil {
			t.Fatalf("%s: %v", c.provider, err)
		}
		if consumer, endpoint, ok := d.Options.Model.Target(); !ok || consumer != c.consumer || endpoint != c.endpoint {
			t.Fatalf("%s: %s %s", c.provider, consumer, endpoint)
		}
		m := d.Options.Model
		m.Endpoint = "https://proxy.example.test/v1/x"
		if _, endpoint, _ := m.Target(); endpoint != m.Endpoint {
			t.Fatalf("%s: the endpoint does not override the default: %s", c.provider, endpoint)
		}
		if _, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \""+c.provider+"\"\nid = \"m\"\ncredential = \"k\"\n[credentials.k]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"); err == nil {
			t.Fatalf("%s: a vercel credential was accepted", c.provider)
		}
		if _, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \""+c.provider+"\"\ncredential = \"k\"\n[credentials.k]\nconsumer = \""+string(c.consumer)+"\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n"); err == nil {
			t.Fatalf("%s: a profile without id was accepted", c.provider)
		}
	}
}
