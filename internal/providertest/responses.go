package providertest

import (
	"fmt"
	"strconv"
	"strings"
)

// respEvents builds an Open Responses event stream.
type respEvents struct {
	out []string
	seq int
}

func (r *respEvents) ev(typ, fields string) {
	if fields != "" {
		fields = "," + fields
	}
	r.out = append(r.out, fmt.Sprintf("event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, r.seq, fields))
	r.seq++
}

const respUsage = `"usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":3},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":18}`

func respObject(status string, q Quirk, extra string) string {
	s := `"response":{"id":"resp_1","object":"response","status":"` + status + `","model":"m"`
	if q == UsageEveryChunk {
		s += "," + respUsage
	}
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// responsesFrames renders turn t as Open Responses events.
func responsesFrames(t Turn, turn int, q Quirk, reasoning bool) []string {
	r := &respEvents{}
	r.ev("response.created", respObject("in_progress", q, `"output":[]`))
	if q == OverloadedEvent {
		r.ev("error", `"code":"overloaded","message":`+quote(MessageOverloaded))
		return r.out
	}
	r.ev("response.in_progress", respObject("in_progress", q, `"output":[]`))
	idx := 0
	if q == ReasoningDeltas || reasoning {
		enc := quote(fmt.Sprintf("enc-turn-%d", turn))
		r.ev("response.output_item.added", `"output_index":0,"item":{"id":"rs_0","type":"reasoning","summary":[]}`)
		r.ev("response.reasoning_summary_part.added", `"item_id":"rs_0","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}`)
		r.ev("response.reasoning_summary_text.delta", `"item_id":"rs_0","output_index":0,"summary_index":0,"delta":"Let me think."`)
		r.ev("response.reasoning_summary_text.done", `"item_id":"rs_0","output_index":0,"summary_index":0,"text":"Let me think."`)
		r.ev("response.reasoning_summary_part.done", `"item_id":"rs_0","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":"Let me think."}`)
		r.ev("response.output_item.done", `"output_index":0,"item":{"id":"rs_0","type":"reasoning","summary":[{"type":"summary_text","text":"Let me think."}],"encrypted_content":`+enc+`}`)
		idx++
	}
	midErr := func() []string {
		r.ev("error", `"code":"server_error","message":`+quote(MessageMidStream))
		return r.out
	}
	if t.Text != "" {
		item := fmt.Sprintf(`"item_id":"msg_%d","output_index":%d,"content_index":0`, idx, idx)
		r.ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"msg_%d","type":"message","status":"in_progress","role":"assistant","content":[]}`, idx, idx))
		r.ev("response.content_part.added", item+`,"part":{"type":"output_text","text":"","annotations":[]}`)
		for i, p := range textPieces(t.Text) {
			r.ev("response.output_text.delta", item+`,"delta":`+quote(p)+`,"logprobs":[]`)
			if q == ErrorEventMidStream && i == 0 {
				return midErr()
			}
			if q == ContentFilter && i == 0 {
				r.ev("response.incomplete", respObject("incomplete", q, `"incomplete_details":{"reason":"content_filter"}`))
				return r.out
			}
		}
		all := quote(t.Text)
		r.ev("response.output_text.done", item+`,"text":`+all+`,"logprobs":[]`)
		r.ev("response.content_part.done", item+`,"part":{"type":"output_text","text":`+all+`,"annotations":[]}`)
		r.ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}`, idx, idx, all))
		idx++
	}
	calls := t.Calls
	added := func(i, at int, c Call) {
		id, ok := callID(c, turn, i, q)
		idField := ""
		if ok {
			idField = `"call_id":` + quote(id) + `,`
		}
		r.ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"in_progress",%s"name":%s,"arguments":""}`, at, at, idField, quote(c.Name)))
	}
	argDelta := func(at int, p string) {
		r.ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"delta":%s`, at, at, quote(p)))
	}
	done := func(i, at int, c Call, args string) {
		id, ok := callID(c, turn, i, q)
		idField := ""
		if ok {
			idField = `"call_id":` + quote(id) + `,`
		}
		r.ev("response.function_call_arguments.done", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"arguments":%s`, at, at, quote(args)))
		r.ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":{"id":"fc_%d","type":"function_call","status":"completed",%s"name":%s,"arguments":%s}`, at, at, idField, quote(c.Name), quote(args)))
	}
	if q == LengthHalfToolCall && len(calls) > 0 {
		c := calls[0]
		half := c.Args[:len(c.Args)/2]
		added(0, idx, c)
		argDelta(idx, half)
		done(0, idx, c, half)
		r.ev("response.incomplete", respObject("incomplete", q, `"incomplete_details":{"reason":"max_output_tokens"},`+respUsage))
		return r.out
	}
	if q == ParallelInterleaved {
		pieces := make([][]string, len(calls))
		for i, c := range calls {
			added(i, idx+i, c)
			pieces[i] = argPieces(c.Args, q)
		}
		for j := 0; ; j++ {
			more := false
			for i := range calls {
				if j < len(pieces[i]) {
					argDelta(idx+i, pieces[i][j])
					more = true
				}
			}
			if !more {
				break
			}
		}
		for i, c := range calls {
			done(i, idx+i, c, c.Args)
		}
	} else {
		for i, c := range calls {
			added(i, idx+i, c)
			for _, p := range argPieces(c.Args, q) {
				argDelta(idx+i, p)
			}
			if q == ErrorEventMidStream && t.Text == "" {
				return midErr()
			}
			done(i, idx+i, c, c.Args)
		}
	}
	usage := respUsage
	if q == UsageAbsent {
		usage = `"usage":null`
	}
	r.ev("response.completed", `"response":{"id":"resp_`+strconv.Itoa(turn)+`","object":"response","status":"completed","model":"gpt-fixture-2025",`+usage+`}`)
	if q == NoDone {
		return r.out
	}
	// Responses streams end at the terminal event; some servers also send
	// the Chat Completions terminator.
	return append(r.out, strings.Repeat("data: [DONE]\n\n", 1))
}
