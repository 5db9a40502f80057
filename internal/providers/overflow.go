package providers

import (
	"encoding/json"
	"errors"
	"io"
)

// MaxOverflowBodyBytes bounds how much of a 400 or 413 error body is
// inspected for an explicit context-overflow code (REFERENCE §5.6): a body
// longer than this is not inspected at all, so a code past the bound never
// counts.
const MaxOverflowBodyBytes = 8192

// The explicit error codes that say a request overflowed the model's
// context window: OpenAI-compatible gateways answer HTTP 400 with
// context_length_exceeded, others HTTP 413 with context_window_exceeded.
const (
	OverflowContextLength = "context_length_exceeded"
	OverflowContextWindow = "context_window_exceeded"
)

// readOverflowCode reads at most MaxOverflowBodyBytes+1 bytes of an error
// body and reports whether it holds an explicit overflow code. The bytes
// are inspected and dropped, never kept.
func readOverflowCode(body io.Reader) bool {
	buf, err := io.ReadAll(io.LimitReader(body, MaxOverflowBodyBytes+1))
	if err != nil {
		return false
	}
	return OverflowCode(buf)
}

// OverflowCode reports whether an HTTP error body is an explicit context
// overflow: a JSON object of at most MaxOverflowBodyBytes bytes whose
// error.code (or, for gateways that flatten it, top-level code) is
// context_length_exceeded or context_window_exceeded. Anything else
// (a longer body, a message that merely mentions the words, a code in
// another member) is not.
func OverflowCode(body []byte) bool {
	if len(body) > MaxOverflowBodyBytes {
		return false
	}
	var doc struct {
		Error *struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	code := doc.Code
	if doc.Error != nil {
		code = doc.Error.Code
	}
	var s string
	if json.Unmarshal(code, &s) != nil {
		return false
	}
	return s == OverflowContextLength || s == OverflowContextWindow
}

// ErrContextOverflow is the kind of a call the provider refused because
// the request overflowed its context window (an explicit overflow code):
// errors.Is matches it on such an *Error. The engine answers it with one
// compaction and one retry on the same entry.
var ErrContextOverflow = errors.New("providers: the request overflowed the model's context window")

// overflowError is the error of an explicit overflow answer: the provider
// received the request and refused it as too large for its window. It has
// no retry class: a route never falls back from it.
func overflowError(status int) *Error {
	return &Error{Code: CodeContextTooLarge, Delivery: ResponseReceived, Status: status,
		Reason: "the provider says the request overflows the model's context window", Err: ErrContextOverflow}
}
