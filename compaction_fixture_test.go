package pablo

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/compaction"
)

// compactGateway is a loopback OpenAI-compatible gateway for compaction:
// it counts the bytes of every request body, tells summary requests (the
// summary instructions, no tools) from normal ones, answers normal
// requests with an fs_read of big.md until the last turn, and answers
// overflow the way real gateways do once a body passes its window.
type compactGateway struct {
	srv *httptest.Server

	// turns is the normal request that gets the final answer.
	turns int
	// windowBytes, when set, is the largest body the gateway takes; a
	// longer normal request gets overflow (HTTP 400 context_length_exceeded,
	// or HTTP 413 context_window_exceeded with status413).
	windowBytes int
	status413   bool
	// overflowBody, when set, is the body of every overflow answer.
	overflowBody string
	// summary answers a summary request: "ok" (default), "long" (a
	// summary as long as what it replaces), "tool" (a tool call),
	// "empty", "500", "block" (never answers until the client leaves).
	summary string
	// onSummary, when set, runs when a summary request arrives.
	onSummary func()
	// overflowFrom, when set, is the first normal request answered with
	// overflow whatever its size.
	overflowFrom int
	// noUsage: the gateway reports no usage.
	noUsage bool

	mu     sync.Mutex
	normal []int    // body bytes of each normal request
	sums   []int    // body bytes of each summary request
	seen   []string // the messages' text of every request, for secret checks
	// messages holds each normal request's message texts.
	messages [][]string
	// summaryModels are the model IDs summary requests named, and
	// summaryMaxTokens their max_tokens.
	summaryModels    []string
	summaryMaxTokens []int64
	// summaryText, when set, is the summary an "ok" summary request gets.
	summaryText string
}

func newCompactGateway(t testing.TB, turns int) *compactGateway {
	g := &compactGateway{turns: turns}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *compactGateway) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body struct {
		Model     string `json:"model"`
		MaxTokens int64  `json:"max_tokens"`
		Messages  []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	json.Unmarshal(b, &body)
	isSummary := len(body.Messages) > 0 && body.Messages[0].Content != nil && *body.Messages[0].Content == compaction.Instructions && len(body.Tools) == 0
	g.mu.Lock()
	for _, m := range body.Messages {
		if m.Content != nil {
			g.seen = append(g.seen, *m.Content)
		}
	}
	var n int
	if isSummary {
		g.sums = append(g.sums, len(b))
		g.summaryModels = append(g.summaryModels, body.Model)
		g.summaryMaxTokens = append(g.summaryMaxTokens, body.MaxTokens)
	} else {
		g.normal = append(g.normal, len(b))
		n = len(g.normal)
		var texts []string
		for _, m := range body.Messages {
			if m.Content != nil {
				texts = append(texts, *m.Content)
			}
		}
		g.messages = append(g.messages, texts)
	}
	onSummary := g.onSummary
	g.mu.Unlock()
	if !isSummary && (g.windowBytes > 0 && len(b) > g.windowBytes || g.overflowFrom > 0 && n >= g.overflowFrom) {
		g.overflow(w)
		return
	}
	usage := `{"choices":[]}`
	if !g.noUsage {
		usage = `{"choices":[],"usage":{"prompt_tokens":` + strconv.Itoa(len(b)/4) + `,"completion_tokens":8,"total_tokens":` + strconv.Itoa(len(b)/4+8) + `}}`
	}
	send := sseSender(w)
	if isSummary {
		if onSummary != nil {
			onSummary()
		}
		switch g.summary {
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			return
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case "block":
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch g.summary {
		case "tool":
			send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_s","type":"function","function":{"name":"fs_read","arguments":"{\"path\":\"big.md\"}"}}]},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		default:
			text := "Read big.md " + strconv.Itoa(len(body.Messages)) + " times; every read returned the same ledger page."
			if g.summaryText != "" {
				text = g.summaryText
			}
			switch g.summary {
			case "long":
				text = strings.Repeat("s", len(*body.Messages[1].Content))
			case "empty":
				text = "  \n"
			}
			q, _ := json.Marshal(text)
			send(`{"choices":[{"index":0,"delta":{"content":` + string(q) + `},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		}
		send(usage)
		send("[DONE]")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if n >= g.turns {
		send(`{"choices":[{"index":0,"delta":{"content":"done after ` + strconv.Itoa(n) + ` turns"},"finish_reason":null}]}`)
		send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	} else {
		send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_` + strconv.Itoa(n) + `","type":"function","function":{"name":"fs_read","arguments":"{\"path\":\"big.md\"}"}}]},"finish_reason":null}]}`)
		send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	}
	send(usage)
	send("[DONE]")
}

// overflow answers as gateways do: HTTP 400 with an OpenAI-style error
// whose code is context_length_exceeded, or HTTP 413 with
// context_window_exceeded.
func (g *compactGateway) overflow(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case g.overflowBody != "":
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, g.overflowBody)
	case g.status413:
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, `{"error":{"message":"The request exceeds the model's context window.","type":"request_too_large","code":"context_window_exceeded"}}`)
	default:
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	}
}

func sseSender(w http.ResponseWriter) func(string) {
	fl, _ := w.(http.Flusher)
	return func(s string) {
		io.WriteString(w, "data: "+s+"\n\n")
		if fl != nil {
			fl.Flush()
		}
	}
}

func (g *compactGateway) counts() (normal, sums []int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.normal...), append([]int(nil), g.sums...)
}

// compactDeployment loads a deployment on g with context and limits
// tables (TOML bodies) and a workspace holding big.md of pageBytes bytes.
func compactDeployment(t testing.TB, g *compactGateway, extra string, pageBytes int) *Deployment {
	t.Helper()
	d := providerDeployment(t, openAICompatible(g.srv.URL+"/v1/chat/completions")+extra, nil)
	ws, err := d.Workspace()
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Repeat("INV-1042 paid on 2024-03-01; ", pageBytes/29+1)[:pageBytes]
	if err := os.WriteFile(filepath.Join(ws, "big.md"), []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// compactionEvents are the task's compaction.finished records.
func compactionRecords(events []event.Event) []event.Compaction {
	var out []event.Compaction
	for _, ev := range events {
		if ev.Type == event.CompactionFinished {
			out = append(out, *ev.Compaction)
		}
	}
	return out
}
