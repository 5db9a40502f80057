package pablo

import (
	"testing"

	"github.com/pabloagent/pablo/internal/config"
)

// TestStreamIdleTimeoutIsAModelKey: options.model.stream_idle_timeout_ms
// (and each options.models entry's) reaches the model options; 0 is
// refused, and unset leaves the provider default.
func TestStreamIdleTimeoutIsAModelKey(t *testing.T) {
	t.Parallel()
	d, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \"openai_compatible\"\nid = \"m\"\nendpoint = \"https://llm.example.test/v1/chat/completions\"\nstream_idle_timeout_ms = 30000\n[credentials.k]\nconsumer = \"provider.openai_compatible\"\nsources = [{ kind = \"environment\", name = \"K\" }]\n[options.models.b]\nprovider = \"openai_compatible\"\nid = \"m\"\ncredential = \"k\"\nendpoint = \"https://llm.example.test/v1/chat/completions\"\nstream_idle_timeout_ms = 45000\n")
	if err != nil {
		t.Fatal(err)
	}
	if d.c.Options.Model.StreamIdleTimeoutMS != 30000 || d.c.Options.Models["b"].StreamIdleTimeoutMS != 45000 {
		t.Fatalf("got %d, %d", d.c.Options.Model.StreamIdleTimeoutMS, d.c.Options.Models["b"].StreamIdleTimeoutMS)
	}
	_, err = loadString(t, "schema_version = 1\n[options.model]\nprovider = \"openai_compatible\"\nid = \"m\"\nendpoint = \"https://llm.example.test/v1/chat/completions\"\nstream_idle_timeout_ms = 0\n")
	wantCode(t, err, config.CodeInvalidValue, "/options/model/stream_idle_timeout_ms")
	d, err = loadString(t, "schema_version = 1\n")
	if err != nil || d.c.Options.Model.StreamIdleTimeoutMS != 0 {
		t.Fatalf("default: %v %d", err, d.c.Options.Model.StreamIdleTimeoutMS)
	}
}
