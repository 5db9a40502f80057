package providertest

import "fmt"

// anthEvents builds an Anthropic Messages event stream: each SSE event
// name equals its JSON type.
type anthEvents struct{ out []string }

func (a *anthEvents) ev(typ, fields string) {
	if fields != "" {
		fields = "," + fields
	}
	a.out = append(a.out, fmt.Sprintf("event: %s\ndata: {\"type\":%q%s}\n\n", typ, typ, fields))
}

const anthStartUsage = `"usage":{"input_tokens":11,"cache_read_input_tokens":3,"cache_creation_input_tokens":0,"output_tokens":1}`

// anthropicFrames renders turn t as Messages events, as the Messages
// streaming reference documents them: message_start, ping, content
// blocks by index (start, deltas, stop), message_delta with the stop
// reason and output usage, message_stop.
func anthropicFrames(t Turn, turn int, q Quirk, reasoning bool) []string {
	a := &anthEvents{}
	usage := "," + anthStartUsage
	if q == UsageAbsent {
		usage = ""
	}
	a.ev("message_start", fmt.Sprintf(`"message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-fixture","content":[],"stop_reason":null%s}`, turn, usage))
	if q == OverloadedEvent {
		a.ev("error", `"error":{"type":"overloaded_error","message":`+quote(MessageOverloaded)+`}`)
		return a.out
	}
	a.ev("ping", "")
	idx := 0
	if q == ReasoningDeltas || reasoning {
		a.ev("content_block_start", `"index":0,"content_block":{"type":"thinking","thinking":"","signature":""}`)
		a.ev("content_block_delta", `"index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}`)
		a.ev("content_block_delta", fmt.Sprintf(`"index":0,"delta":{"type":"signature_delta","signature":"sig-turn-%d"}`, turn))
		a.ev("content_block_stop", `"index":0`)
		idx++
	}
	end := func(stop string) []string {
		u := `,"usage":{"output_tokens":7}`
		switch q {
		case UsageAbsent:
			u = ""
		case UsageEveryChunk:
			u = `,"usage":{"input_tokens":11,"cache_read_input_tokens":3,"output_tokens":7}`
		}
		a.ev("message_delta", `"delta":{"stop_reason":"`+stop+`","stop_sequence":null}`+u)
		if q != NoDone {
			a.ev("message_stop", "")
		}
		return a.out
	}
	if t.Text != "" {
		a.ev("content_block_start", fmt.Sprintf(`"index":%d,"content_block":{"type":"text","text":""}`, idx))
		for i, p := range textPieces(t.Text) {
			a.ev("content_block_delta", fmt.Sprintf(`"index":%d,"delta":{"type":"text_delta","text":%s}`, idx, quote(p)))
			if q == ErrorEventMidStream && i == 0 {
				a.ev("error", `"error":{"type":"api_error","message":`+quote(MessageMidStream)+`}`)
				return a.out
			}
			if q == ContentFilter && i == 0 {
				a.ev("content_block_stop", fmt.Sprintf(`"index":%d`, idx))
				return end("refusal")
			}
		}
		a.ev("content_block_stop", fmt.Sprintf(`"index":%d`, idx))
		idx++
	}
	start := func(i, at int, c Call) {
		id, ok := callID(c, turn, i, q)
		idField := ""
		if ok {
			idField = `"id":` + quote(id) + `,`
		}
		a.ev("content_block_start", fmt.Sprintf(`"index":%d,"content_block":{"type":"tool_use",%s"name":%s,"input":{}}`, at, idField, quote(c.Name)))
	}
	delta := func(at int, p string) {
		a.ev("content_block_delta", fmt.Sprintf(`"index":%d,"delta":{"type":"input_json_delta","partial_json":%s}`, at, quote(p)))
	}
	stop := func(at int) { a.ev("content_block_stop", fmt.Sprintf(`"index":%d`, at)) }
	calls := t.Calls
	if q == LengthHalfToolCall && len(calls) > 0 {
		start(0, idx, calls[0])
		delta(idx, calls[0].Args[:len(calls[0].Args)/2])
		stop(idx)
		return end("max_tokens")
	}
	if q == ParallelInterleaved {
		pieces := make([][]string, len(calls))
		for i, c := range calls {
			start(i, idx+i, c)
			pieces[i] = argPieces(c.Args, q)
		}
		for j := 0; ; j++ {
			more := false
			for i := range calls {
				if j < len(pieces[i]) {
					delta(idx+i, pieces[i][j])
					more = true
				}
			}
			if !more {
				break
			}
		}
		for i := range calls {
			stop(idx + i)
		}
	} else {
		for i, c := range calls {
			start(i, idx+i, c)
			for _, p := range argPieces(c.Args, q) {
				delta(idx+i, p)
			}
			if q == ErrorEventMidStream && t.Text == "" {
				a.ev("error", `"error":{"type":"api_error","message":`+quote(MessageMidStream)+`}`)
				return a.out
			}
			stop(idx + i)
		}
	}
	if len(calls) > 0 {
		return end("tool_use")
	}
	return end("end_turn")
}
