package providertest

import (
	"encoding/base64"
	"fmt"
	"strings"
)

const gemUsage = `"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":2,"cachedContentTokenCount":3,"totalTokenCount":18}`

func gemChunk(parts []string, finish string, usage bool) string {
	s := `{"candidates":[{"content":{"role":"model","parts":[` + strings.Join(parts, ",") + `]},"index":0`
	if finish != "" {
		s += `,"finishReason":"` + finish + `"`
	}
	s += `}]`
	if usage {
		s += "," + gemUsage
	}
	return data(s + `,"modelVersion":"gemini-fixture"}`)
}

// GeminiSignature is the thoughtSignature the server gives turn n's first
// function call: base64 of "sig-turn-N", since the API's field is bytes
// (a client that decodes it, as the Google Gen AI SDK does, refuses any
// other text).
func GeminiSignature(n int) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("sig-turn-%d", n)))
}

// geminiFrames renders turn t as streamGenerateContent chunks (alt=sse),
// as the Gemini API reference documents them: data-only frames, each a
// GenerateContentResponse holding new parts of the one candidate, the
// last with finishReason and usageMetadata, no terminator. A function
// call arrives whole (its args an object), so the argument-splitting
// quirks render as a well-behaved stream; with Reasoning, the first call
// carries a thoughtSignature naming its turn ([GeminiSignature]).
func geminiFrames(t Turn, turn int, q Quirk, reasoning bool) []string {
	var out []string
	if q == OverloadedEvent {
		return []string{data(`{"error":{"code":503,"message":` + quote(MessageOverloaded) + `,"status":"UNAVAILABLE"}}`)}
	}
	usage := func(last bool) bool {
		return q != UsageAbsent && (last || q == UsageEveryChunk)
	}
	if q == ReasoningDeltas || reasoning {
		out = append(out, gemChunk([]string{`{"text":"Let me think.","thought":true}`}, "", usage(false)))
	}
	pieces := textPieces(t.Text)
	for i, p := range pieces {
		out = append(out, gemChunk([]string{`{"text":` + quote(p) + `}`}, "", usage(false)))
		if q == ErrorEventMidStream && i == 0 {
			return append(out, data(`{"error":{"code":500,"message":`+quote(MessageMidStream)+`,"status":"INTERNAL"}}`))
		}
		if q == ContentFilter && i == 0 {
			return append(out, gemChunk(nil, "SAFETY", usage(true)))
		}
	}
	var calls []string
	for i, c := range t.Calls {
		id, ok := callID(c, turn, i, q)
		idField := ""
		if ok {
			idField = `"id":` + quote(id) + `,`
		}
		sig := ""
		if i == 0 && reasoning {
			sig = `,"thoughtSignature":"` + GeminiSignature(turn) + `"`
		}
		calls = append(calls, fmt.Sprintf(`{"functionCall":{%s"name":%s,"args":%s}%s}`, idField, quote(c.Name), c.Args, sig))
	}
	if q == ErrorEventMidStream && t.Text == "" && len(calls) > 0 {
		return append(out, gemChunk(calls[:1], "", false), data(`{"error":{"code":500,"message":`+quote(MessageMidStream)+`,"status":"INTERNAL"}}`))
	}
	finish := "STOP"
	if q == LengthHalfToolCall {
		finish = "MAX_TOKENS"
	}
	return append(out, gemChunk(calls, finish, usage(true)))
}
