package providertest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func data(v string) string { return "data: " + v + "\n\n" }

// callID is the ID call i of turn turn is sent with under q; ok is false
// when the ID is left out of the frame.
func callID(c Call, turn, i int, q Quirk) (id string, ok bool) {
	switch q {
	case EmptyCallID:
		return "", true
	case MissingCallID:
		return "", false
	case CallIDReusedAcrossTurns:
		return "call_" + strconv.Itoa(i+1), true
	case CallIDReusedInResponse:
		return "call_dup", true
	}
	if c.ID != "" {
		return c.ID, true
	}
	return fmt.Sprintf("call_t%d_%d", turn, i), true
}

// argPieces splits a call's arguments as q says they stream, always on
// character boundaries (the JSON strings that carry them hold whole
// characters; ArgsSplitUTF8 splits the bytes on the wire instead).
func argPieces(args string, q Quirk) []string {
	switch q {
	case ArgsOneChunk:
		return []string{args}
	case ArgsOneCharAtATime:
		var out []string
		for _, r := range args {
			out = append(out, string(r))
		}
		return out
	}
	half := len(args) / 2
	for half > 0 && half < len(args) && !utf8.RuneStart(args[half]) {
		half++
	}
	return []string{args[:half], args[half:]}
}

// textPieces splits text into word deltas.
func textPieces(text string) []string {
	if text == "" {
		return nil
	}
	return strings.SplitAfter(text, " ")
}

const chatUsage = `{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":3}}`

// chatFrames renders turn t of the conversation as Chat Completions chunks.
func chatFrames(t Turn, turn int, q Quirk) []string {
	var out []string
	k := 0
	add := func(choice string) {
		k++
		v := `{"id":"chatcmpl-` + strconv.Itoa(turn) + `","object":"chat.completion.chunk","created":1,"model":"m","choices":[` + choice + `]`
		if q == UsageEveryChunk {
			v += fmt.Sprintf(`,"usage":{"prompt_tokens":11,"completion_tokens":%d,"total_tokens":%d}`, min(k, 7), 11+min(k, 7))
		}
		out = append(out, data(v+"}"))
	}
	delta := func(d string, finish string) string {
		f := "null"
		if finish != "" {
			f = quote(finish)
		}
		return `{"index":0,"delta":` + d + `,"finish_reason":` + f + `}`
	}
	add(delta(`{"role":"assistant","content":""}`, ""))
	if q == OverloadedEvent {
		out = append(out, data(`{"error":{"message":`+quote(MessageOverloaded)+`,"type":"overloaded_error","code":"overloaded"}}`))
		return out
	}
	if q == ReasoningDeltas {
		add(delta(`{"reasoning_content":"Let me think about it."}`, ""))
		add(delta(`{"reasoning":"The file says so."}`, ""))
	}
	midErr := data(`{"error":{"message":` + quote(MessageMidStream) + `,"type":"server_error","code":502}}`)
	for i, p := range textPieces(t.Text) {
		add(delta(`{"content":`+quote(p)+`}`, ""))
		if q == ErrorEventMidStream && i == 0 {
			return append(out, midErr)
		}
		if q == ContentFilter && i == 0 {
			add(delta(`{}`, "content_filter"))
			return append(out, data("[DONE]"))
		}
	}
	calls := t.Calls
	if q == LengthHalfToolCall && len(calls) > 0 {
		c := calls[0]
		id, _ := callID(c, turn, 0, q)
		add(delta(`{"tool_calls":[{"index":0,"id":`+quote(id)+`,"type":"function","function":{"name":`+quote(c.Name)+`,"arguments":`+quote(c.Args[:len(c.Args)/2])+`}}]}`, ""))
		add(delta(`{}`, "length"))
		out = append(out, data(`{"id":"chatcmpl-`+strconv.Itoa(turn)+`","object":"chat.completion.chunk","choices":[],"usage":`+chatUsage+`}`))
		return append(out, data("[DONE]"))
	}
	start := func(i int, c Call, args string) string {
		id, ok := callID(c, turn, i, q)
		idField := ""
		if ok {
			idField = `"id":` + quote(id) + `,`
		}
		return delta(`{"tool_calls":[{"index":`+strconv.Itoa(i)+`,`+idField+`"type":"function","function":{"name":`+quote(c.Name)+`,"arguments":`+quote(args)+`}}]}`, "")
	}
	piece := func(i int, p string) string {
		return delta(`{"tool_calls":[{"index":`+strconv.Itoa(i)+`,"function":{"arguments":`+quote(p)+`}}]}`, "")
	}
	if q == ParallelInterleaved {
		pieces := make([][]string, len(calls))
		for i, c := range calls {
			add(start(i, c, ""))
			pieces[i] = argPieces(c.Args, q)
		}
		for j := 0; ; j++ {
			more := false
			for i := range calls {
				if j < len(pieces[i]) {
					add(piece(i, pieces[i][j]))
					more = true
				}
			}
			if !more {
				break
			}
		}
	} else {
		for i, c := range calls {
			if q == ArgsOneChunk {
				add(start(i, c, c.Args))
			} else {
				add(start(i, c, ""))
				for _, p := range argPieces(c.Args, q) {
					add(piece(i, p))
				}
			}
			if q == ErrorEventMidStream && t.Text == "" {
				return append(out, midErr)
			}
		}
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	add(delta(`{}`, finish))
	if q != UsageAbsent {
		out = append(out, data(`{"id":"chatcmpl-`+strconv.Itoa(turn)+`","object":"chat.completion.chunk","choices":[],"usage":`+chatUsage+`}`))
	}
	if q != NoDone {
		out = append(out, data("[DONE]"))
	}
	return out
}
