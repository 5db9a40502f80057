package providers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// gemWire is the Gemini API's streamGenerateContent with alt=sse, as its
// reference documents it: data-only frames, each a GenerateContentResponse
// with new parts of one candidate; the last holds finishReason and the
// usage metadata; no terminator.
type gemWire struct{}

const gemUsage = `"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":2,"cachedContentTokenCount":3,"totalTokenCount":18}`

func gemChunkOf(parts, finish string, usage bool) string {
	s := `{"candidates":[{"content":{"role":"model","parts":[` + parts + `]},"index":0`
	if finish != "" {
		s += `,"finishReason":"` + finish + `"`
	}
	s += `}]`
	if usage {
		s += "," + gemUsage
	}
	return "data: " + s + `,"modelVersion":"gemini-test"}` + "\n\n"
}

func (gemWire) text(deltas []string, usage bool) string {
	var b strings.Builder
	b.WriteString(gemChunkOf(`{"text":"Checking.","thought":true}`, "", false))
	for i, d := range deltas {
		q, _ := json.Marshal(d)
		finish := ""
		if i == len(deltas)-1 {
			finish = "STOP"
		}
		b.WriteString(gemChunkOf(`{"text":`+string(q)+`}`, finish, usage && finish != ""))
	}
	return b.String()
}

func (gemWire) tools(text string, calls []call, usage bool) string {
	var parts []string
	if text != "" {
		q, _ := json.Marshal(text)
		parts = append(parts, `{"text":`+string(q)+`}`)
	}
	for i, c := range calls {
		sig := ""
		if i == 0 {
			sig = `,"thoughtSignature":"c2ln"`
		}
		parts = append(parts, fmt.Sprintf(`{"functionCall":{"id":%q,"name":%q,"args":%s}%s}`, c.id, c.name, c.args, sig))
	}
	return gemChunkOf(strings.Join(parts, ","), "STOP", usage)
}

func (gemWire) hostileFrames() map[string]string {
	return map[string]string{
		"invalid_json":    "data: {\"candidates\":[\n\n",
		"deep_nesting":    "data: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n\n",
		"second_choice":   "data: {\"candidates\":[{\"content\":{\"parts\":[]}},{\"content\":{\"parts\":[]}}]}\n\n",
		"in_stream_error": "data: {\"error\":{\"code\":500,\"message\":\"" + testSecret + "\",\"status\":\"INTERNAL\"}}\n\n",
		"audio":           "data: {\"candidates\":[{\"content\":{\"parts\":[{\"inlineData\":{\"mimeType\":\"audio/wav\",\"data\":\"AA==\"}}]}}]}\n\n",
		"long_call_id":    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"id\":\"" + strings.Repeat("c", 65) + "\",\"name\":\"f\",\"args\":{}}}]}}]}\n\n",
	}
}

func (gemWire) contentFilter() string {
	return "data: {\"candidates\":[{\"content\":{\"parts\":[{\"executableCode\":{\"language\":\"PYTHON\",\"code\":\"x\"}}]}}]}\n\n"
}
