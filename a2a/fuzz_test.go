package a2a

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzAdmitCard: any bytes either admit or refuse with a CardError, never
// panic, and an admitted card holds every rule.
func FuzzAdmitCard(f *testing.F) {
	f.Add(mustJSON(f, goodCard(testEndpoint)))
	f.Add([]byte(`{"supportedInterfaces":[{"url":"https://agent.example.test/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"defaultInputModes":["text/plain"],"defaultOutputModes":["application/json"],"securitySchemes":{"b":{"httpAuthSecurityScheme":{"scheme":"bearer"}}},"securityRequirements":[{"schemes":{"b":{"list":[]}}}]}`))
	f.Add([]byte(`{"skills":[{"id":"a"},{"id":"a"}]}`))
	f.Add([]byte(`[]`))
	f.Add(mustJSON(f, legacyCard(testEndpoint)))
	f.Add([]byte(`{"protocolVersion":"0.3.0","url":"https://agent.example.test/rpc","defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"securitySchemes":{"b":{"type":"http","scheme":"bearer"}},"security":[{"b":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := testRemote
		r.Bearer = &Bearer{Scheme: "b", Credential: "c"}
		card, err := AdmitCard(r, data)
		if err != nil {
			var ce *CardError
			if !errors.As(err, &ce) || ce.Reason == "" {
				t.Fatalf("a refusal that is not a CardError: %v", err)
			}
			if len(data) >= 24 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("the refusal quotes the card: %v", err)
			}
			return
		}
		if len(data) > MaxCardBytes || !strings.HasPrefix(card.Digest, "sha256:") || len(card.Skills) > MaxSkills {
			t.Fatalf("admitted %+v", card)
		}
	})
}

// FuzzLegacyResult: a 0.3 result or frame never panics the decoder, and
// what it admits is one of the four kinds, with no decoder message that
// quotes the peer.
func FuzzLegacyResult(f *testing.F) {
	f.Add([]byte(`{"kind":"task","id":"t","contextId":"c","status":{"state":"working"}}`), true)
	f.Add([]byte(`{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"bytes":"AQID","mimeType":"a/b"}}]}`), false)
	f.Add([]byte(`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"data","data":{"k":1}}]}}`), true)
	f.Add([]byte(`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"unknown"},"final":true}`), true)
	f.Fuzz(func(t *testing.T, data []byte, stream bool) {
		ev, err := decodeLegacyResult(data, stream)
		if err != nil {
			if len(data) >= 24 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("the error quotes the peer: %v", err)
			}
			return
		}
		if ev == nil {
			t.Fatal("no event and no error")
		}
	})
}

// FuzzSSEFrames: the frame reader never panics, never returns a frame past
// its bound, and reads back frames written in any line ending.
func FuzzSSEFrames(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\n"), "one", uint8(0))
	f.Add([]byte(": comment\r\nevent: x\r\ndata: a\r\ndata: b\r\n\r\n"), "two\nlines", uint8(1))
	f.Add([]byte("data: cut"), "", uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, payload string, ending uint8) {
		const max = 256
		fr := newFrameReader(bytes.NewReader(raw), max)
		for range 1000 {
			frame, err := fr.next()
			if err != nil {
				break
			}
			if len(frame) > max {
				t.Fatalf("a frame of %d bytes past the bound %d", len(frame), max)
			}
		}
		// Round trip: payload's lines written as data lines come back.
		if strings.ContainsAny(payload, "\r") || len(payload) > max {
			return
		}
		eol := []string{"\n", "\r\n", "\r"}[ending%3]
		var b strings.Builder
		for line := range strings.SplitSeq(payload, "\n") {
			b.WriteString("data: " + line + eol)
		}
		b.WriteString(eol)
		fr = newFrameReader(strings.NewReader(b.String()+":tail"+eol), max)
		frame, err := fr.next()
		if err != nil || string(frame) != payload {
			t.Fatalf("wrote %q, read %q, %v", payload, frame, err)
		}
		if _, err := fr.next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last frame: %v", err)
		}
	})
}

func TestFrameReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		frames []string
		end    error
	}{
		{"data: a\n\ndata: b\n\n", []string{"a", "b"}, io.EOF},
		{"data:a\ndata: b\n\n", []string{"a\nb"}, io.EOF},
		{"id: 1\nevent: e\nretry: 5\n: c\n\n", nil, io.EOF},
		{"data: a\n\ndata: cut", []string{"a"}, io.ErrUnexpectedEOF},
		{"data: a\n\ndata: no blank\n", []string{"a"}, io.ErrUnexpectedEOF},
		{"data: " + strings.Repeat("x", 16) + "\n\n", []string{strings.Repeat("x", 16)}, io.EOF},
		{"data: " + strings.Repeat("x", 17) + "\n\n", nil, errFrameTooLarge},
		{"data: " + strings.Repeat("x", 8) + "\ndata: " + strings.Repeat("x", 8) + "\n\n", nil, errFrameTooLarge},
	} {
		fr := newFrameReader(strings.NewReader(tc.in), 16)
		var got []string
		var err error
		for {
			var f []byte
			if f, err = fr.next(); err != nil {
				break
			}
			got = append(got, string(f))
		}
		if !errors.Is(err, tc.end) || strings.Join(got, "|") != strings.Join(tc.frames, "|") {
			t.Errorf("%q: frames %q, end %v; want %q, %v", tc.in, got, err, tc.frames, tc.end)
		}
	}
}
