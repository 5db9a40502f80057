package providers

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/textx"
)

// MaxProviderMessageBytes bounds the provider's own words an error keeps:
// the message of an error body or an in-stream error event, cut to this
// many bytes, with the call's credential masked out.
const MaxProviderMessageBytes = 512

// maskedSecret replaces the call's credential where a provider echoed it.
const maskedSecret = "[REDACTED]"

// errorBody is the error document providers answer with: OpenAI's
// {"error":{"message","type","code"}}, Anthropic's {"type":"error",
// "error":{"type","message"}}, a flattened {"message","code"} or
// {"error":"text"}, or FastAPI's {"detail":"text"}.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Detail  json.RawMessage `json:"detail"`
	Code    json.RawMessage `json:"code"`
	Type    string          `json:"type"`
}

type errorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	// Status is Google's canonical code (RESOURCE_EXHAUSTED, UNAVAILABLE).
	Status string `json:"status"`
}

// providerError is what a provider said about an error: its message and
// the words that classify it (type and code, lower case).
type providerError struct {
	message string
	kind    string
}

// parseProviderError reads an error document. ok is false when data is not
// one.
func parseProviderError(data []byte) (providerError, bool) {
	var b errorBody
	if json.Unmarshal(data, &b) != nil {
		return providerError{}, false
	}
	pe := providerError{message: b.Message, kind: b.Type + " " + rawWord(b.Code)}
	if len(b.Error) > 0 && string(b.Error) != "null" {
		var o errorObject
		var s string
		switch {
		case json.Unmarshal(b.Error, &o) == nil:
			if o.Message != "" {
				pe.message = o.Message
			}
			pe.kind += " " + o.Type + " " + rawWord(o.Code) + " " + o.Status
		case json.Unmarshal(b.Error, &s) == nil:
			pe.message = s
		}
	}
	if pe.message == "" && len(b.Detail) > 0 {
		var s string
		if json.Unmarshal(b.Detail, &s) == nil {
			pe.message = s
		} else {
			pe.message = string(b.Detail)
		}
	}
	pe.kind = strings.ToLower(strings.TrimSpace(pe.kind))
	if pe.message == "" && pe.kind == "" {
		return providerError{}, false
	}
	return pe, true
}

func rawWord(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) > 0 && string(raw) != "null" {
		return string(raw)
	}
	return ""
}

// said is the provider's message as an error keeps it: the credential
// masked, control characters dropped, at most MaxProviderMessageBytes, or
// empty.
func said(message, secret string) string {
	if secret != "" {
		message = strings.ReplaceAll(message, secret, maskedSecret)
	}
	message = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, message)
	message = strings.TrimSpace(message)
	if message == "" {
		return ""
	}
	return textx.Shorten(message, MaxProviderMessageBytes-len("…"))
}

// withSaid appends the provider's words to a reason.
func withSaid(reason, message string) string {
	if message == "" {
		return reason
	}
	return reason + "; the provider said: " + strconv.Quote(message)
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (relative to now). Zero when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > 86400 {
			n = 86400
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// readErrorBody reads at most MaxOverflowBodyBytes+1 bytes of an error
// answer's body.
func readErrorBody(r io.Reader) []byte {
	buf, _ := io.ReadAll(io.LimitReader(r, MaxOverflowBodyBytes+1))
	return buf
}

// endpointName is the endpoint as an error names it: scheme, host and
// path, without userinfo, query or fragment.
func endpointName(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "the endpoint"
	}
	return textx.Cut(u.Scheme+"://"+u.Host+u.EscapedPath(), 256)
}
