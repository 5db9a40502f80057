package a2a

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// body encodes call's JSON-RPC request. The requests a child sends (a
// 1.0 send, GetTask, CancelTask) are written by appending their fixed
// envelope and quoting their strings, byte for byte what encoding/json
// writes of them (TestRequestBodyIsWhatEncodingJSONWrites), without its
// reflection or a2a-go's marshalling of every part; any other request is
// marshalled.
func (call rpcCall) body() ([]byte, error) {
	b := make([]byte, 0, 512)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = appendQuoted(b, call.id)
	b = append(b, `,"method":`...)
	b = appendQuoted(b, call.method)
	b = append(b, `,"params":`...)
	var ok bool
	switch p := call.params.(type) {
	case sendParams:
		b, ok = appendSendParams(b, p)
	case getParams:
		b, ok = append(appendQuoted(append(b, `{"id":`...), p.ID), '}'), true
	case cancelParams:
		b, ok = append(appendQuoted(append(b, `{"id":`...), p.ID), '}'), true
	}
	if !ok {
		return json.Marshal(rpcOut{JSONRPC: "2.0", ID: call.id, Method: call.method, Params: call.params})
	}
	return append(b, '}'), nil
}

// appendSendParams appends a 1.0 send's params, or reports false for a
// message holding what a child never sends (metadata, extensions, task
// references, a part's metadata).
func appendSendParams(b []byte, p sendParams) ([]byte, bool) {
	m := p.Message
	if m == nil || m.ContextID != "" || m.Extensions != nil || m.Metadata != nil || m.ReferenceTasks != nil || m.TaskID != "" || m.Parts == nil {
		return b, false
	}
	b = append(b, `{"configuration":{"acceptedOutputModes":`...)
	if p.Configuration.AcceptedOutputModes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, mode := range p.Configuration.AcceptedOutputModes {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, mode)
		}
		b = append(b, ']')
	}
	if p.Configuration.ReturnImmediately {
		b = append(b, `,"returnImmediately":true`...)
	}
	b = append(b, `},"message":{"messageId":`...)
	b = appendQuoted(b, m.ID)
	b = append(b, `,"parts":[`...)
	for i, part := range m.Parts {
		if part == nil || part.Metadata != nil {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		switch c := part.Content.(type) {
		case sdk.Text:
			b = appendQuoted(append(b, `{"text":`...), string(c))
		case sdk.Raw:
			if c == nil {
				return b, false
			}
			b = append(b, `{"raw":"`...)
			b = base64.StdEncoding.AppendEncode(b, c)
			b = append(b, '"')
		case sdk.Data:
			v, err := json.Marshal(c.Value)
			if err != nil {
				return b, false
			}
			b = append(append(b, `{"data":`...), v...)
		case sdk.URL:
			if c == "" {
				return b, false
			}
			b = appendQuoted(append(b, `{"url":`...), string(c))
		default:
			return b, false
		}
		if part.Filename != "" {
			b = appendQuoted(append(b, `,"filename":`...), part.Filename)
		}
		if part.MediaType != "" {
			b = appendQuoted(append(b, `,"mediaType":`...), part.MediaType)
		}
		b = append(b, '}')
	}
	b = append(b, `],"role":`...)
	b = appendQuoted(b, m.Role.String())
	return append(b, "}}"...), true
}

// appendQuoted appends s as a JSON string, as encoding/json writes it:
// printable ASCII other than its escaped characters as it is, anything
// else by encoding/json itself.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// target is a URL parsed once, when the client was made: a request to it
// is made without parsing it again.
type target struct {
	raw  string
	url  *url.URL
	host string
}

func newTarget(raw string) *target {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	return &target{raw: raw, url: u, host: strings.TrimSuffix(u.Host, ":")}
}

// request makes a request to raw, from its target when the client
// prepared one for that URL: what http.NewRequestWithContext makes, with
// its Header keys in canonical form.
func (c *Client) request(ctx context.Context, method, raw string, prepared *target, body []byte) (*http.Request, error) {
	if prepared == nil || prepared.raw != raw {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		return http.NewRequestWithContext(ctx, method, raw, r)
	}
	u := *prepared.url
	req := &http.Request{
		Method: method, URL: &u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, 4), Host: prepared.host,
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return req.WithContext(ctx), nil
}
