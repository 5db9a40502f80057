package providers

import (
	"context"

	"github.com/pabloagent/pablo/model"
)

// Model is one configured model behind one wire protocol. Generate calls
// emit for every text delta, inline and in order, before it reads further;
// an error from emit stops the stream and is returned wrapped in an [*Error]
// whose Escaped field is true. A Model is safe for concurrent use.
type Model interface {
	Generate(ctx context.Context, req *model.Request, emit func(delta string) error) (*model.Response, error)
}

// Provider names a wire adapter, as configuration spells it.
type Provider string

// The providers.
const (
	OpenAICompatible Provider = "openai_compatible"
	Vercel           Provider = "vercel"
	OpenRouter       Provider = "openrouter"
	OpenResponses    Provider = "open_responses"
)
