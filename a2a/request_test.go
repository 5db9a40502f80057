package a2a

import (
	"bytes"
	"encoding/json"
	"net/textproto"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"
)

// TestRequestBodyIsWhatEncodingJSONWrites: the appended request bodies are
// byte for byte what marshalling the request writes, for every kind of
// part and strings encoding/json escapes.
func TestRequestBodyIsWhatEncodingJSONWrites(t *testing.T) {
	odd := "<a href=\"x\">&amp;</a>\\ \t\n\x01 é \u2028 \xff"
	msg := func(parts ...*sdk.Part) *sdk.Message {
		return &sdk.Message{ID: "m-1", Role: sdk.MessageRoleUser, Parts: parts}
	}
	send := func(m *sdk.Message, modes []string, immediately bool) sendParams {
		var p sendParams
		p.Message, p.Configuration.AcceptedOutputModes, p.Configuration.ReturnImmediately = m, modes, immediately
		return p
	}
	for _, params := range []any{
		send(msg(sdk.NewTextPart("echo:benchmark")), []string{"text/plain"}, false),
		send(msg(sdk.NewTextPart(odd), sdk.NewTextPart("")), []string{"text/plain", odd}, true),
		send(msg(&sdk.Part{Content: sdk.Raw{1, 2, 3, 250}, Filename: odd, MediaType: "application/octet-stream"}, &sdk.Part{Content: sdk.Raw{}}), nil, false),
		send(msg(&sdk.Part{Content: sdk.Data{Value: map[string]any{"b": []any{1.5, "<", nil, true}, "a": odd}}}, &sdk.Part{Content: sdk.Data{}}), []string{}, false),
		send(msg(&sdk.Part{Content: sdk.URL("https://x.test/a?b=<c>"), MediaType: "text/html"}), []string{"a"}, false),
		getParams{ID: odd},
		cancelParams{ID: "t-1"},
		send(&sdk.Message{ID: "m", Role: sdk.MessageRoleUser, Parts: []*sdk.Part{sdk.NewTextPart("x")}, Metadata: map[string]any{"k": 1}}, []string{"a"}, false),
	} {
		for _, method := range []string{"SendStreamingMessage", "Get<Task>"} {
			call := rpcCall{id: "req-" + odd, method: method, params: params}
			got, err := call.body()
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(rpcOut{JSONRPC: "2.0", ID: call.id, Method: call.method, Params: call.params})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("appended\n%s\nencoding/json\n%s", got, want)
			}
		}
	}
}

// TestRequestHeadersAreCanonical: the header keys written straight into
// the map are the keys http.Header.Set would use.
func TestRequestHeadersAreCanonical(t *testing.T) {
	for _, k := range []string{hdrAccept, hdrContentType, hdrAuthorization, hdrVersion, hdrExtensions, hdrLegacyExtensions} {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q)", k, c)
		}
	}
}

// BenchmarkRequestBody: a streamed send's body, appended and marshalled.
func BenchmarkRequestBody(b *testing.B) {
	var p sendParams
	p.Message = &sdk.Message{ID: "0b7c8a4e-5f7e-4d5a-9a63-2a4c0f0e8f11", Role: sdk.MessageRoleUser, Parts: []*sdk.Part{sdk.NewTextPart("echo:benchmark")}}
	p.Configuration.AcceptedOutputModes = []string{"text/plain"}
	call := rpcCall{id: "5c3e0c52-3a7b-4f0e-8d0a-0d3c6a3c9b7e", method: "SendStreamingMessage", params: p}
	b.Run("way=appended", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			call.body()
		}
	})
	b.Run("way=marshalled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(rpcOut{JSONRPC: "2.0", ID: call.id, Method: call.method, Params: call.params})
		}
	})
}

// TestRandomIDsAreVersion4UUIDs: the message and request IDs drawn
// together are distinct version 4 UUIDs.
func TestRandomIDsAreVersion4UUIDs(t *testing.T) {
	var o Options
	a, b := o.newIDs()
	for _, s := range []string{a, b} {
		u, err := uuid.Parse(s)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != s {
			t.Errorf("%q: %v %v %v", s, err, u.Version(), u.Variant())
		}
	}
	if a == b {
		t.Errorf("the same ID twice: %s", a)
	}
}
