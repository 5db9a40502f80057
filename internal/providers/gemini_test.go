package providers

import (
	"context"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/internal/providertest"
)

// The request carries the instructions as systemInstruction, the tools as
// functionDeclarations, the output allowance and the thinking budget in
// generationConfig, and the key as x-goog-api-key.
func TestGeminiRequestShape(t *testing.T) {
	srv := providertest.New(providertest.Options{Wire: providertest.Gemini})
	defer srv.Close()
	m, err := NewGemini(NewClient(ClientOptions{}), GeminiOptions{Endpoint: srv.Endpoint(), Model: "gemini-test", Secret: testSecret, ThinkingBudget: 512})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), testRequest, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	body := string(srv.Bodies()[0])
	for _, w := range []string{`"systemInstruction":{"parts":[{"text":"Be brief."}]}`, `"functionDeclarations":[{"name":"fs_read"`, `"generationConfig":{"maxOutputTokens":1024,"thinkingConfig":{"thinkingBudget":512}}`} {
		if !strings.Contains(body, w) {
			t.Fatalf("the request lacks %s: %s", w, body)
		}
	}
	if srv.Header().Get("x-goog-api-key") != testSecret {
		t.Fatal("the key is not in x-goog-api-key")
	}
}

// A prompt blocked by the safety filter is a rejection that says so, not
// a retryable failure; RESOURCE_EXHAUSTED in the stream is rate_limited.
func TestGeminiSafetyBlockIsTypedAndResourceExhaustedRetryable(t *testing.T) {
	p := newPeer(t, stream(200, "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":4}}\n\n"))
	m, _ := NewGemini(NewClient(ClientOptions{}), GeminiOptions{Endpoint: p.srv.URL, Model: "g", Secret: testSecret})
	_, err := m.Generate(context.Background(), testRequest, func(string) error { return nil })
	if e := wantError(t, err, CodeRejected, ResponseReceived, ""); !strings.Contains(e.Reason, "safety filter blocked the prompt (promptFeedback.blockReason SAFETY)") {
		t.Fatal(e)
	}
	p = newPeer(t, stream(200, "data: {\"error\":{\"code\":429,\"message\":\"Quota exceeded\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n\n"))
	m, _ = NewGemini(NewClient(ClientOptions{}), GeminiOptions{Endpoint: p.srv.URL, Model: "g", Secret: testSecret})
	_, err = m.Generate(context.Background(), testRequest, func(string) error { return nil })
	wantError(t, err, CodeRejected, ResponseReceived, RetryRateLimited)
}
