package providers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/model"
)

// A Chat Completions model against a local server (an Ollama, vLLM or
// llama.cpp server speaks the same wire).
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
			"data: [DONE]\n\n")
	}))
	defer srv.Close()
	client := providers.NewClient(providers.ClientOptions{})
	m, err := providers.NewChat(client, providers.ChatOptions{Provider: providers.OpenAICompatible, Endpoint: srv.URL + "/v1/chat/completions", Model: "llama3"})
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}},
		func(delta string) error { fmt.Println("delta:", delta); return nil })
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.FinishReason, resp.UsageReported)
	// Output:
	// delta: Hello
	// stop false
}
