package a2a

import (
	"errors"
	"fmt"
)

// The kinds of every error of the package, usable with errors.Is.
var (
	// ErrConfig is the kind of an [Options] or [Remote] the package
	// refuses before anything is sent.
	ErrConfig = errors.New("a2a: invalid configuration")
	// ErrCardRefused is the kind of every [CardError]: the remote's Agent
	// Card was not fetched or not admitted, so nothing was sent to it.
	ErrCardRefused = errors.New("a2a: agent card refused")
	// ErrProtocol is the kind of every [ProtocolError]: the peer answered
	// outside the A2A 1.0 JSON-RPC subset, or with a JSON-RPC error.
	ErrProtocol = errors.New("a2a: protocol error")
	// ErrUnknownRemote is a request for a remote the host did not
	// configure.
	ErrUnknownRemote = errors.New("a2a: unknown remote")
	// ErrRequest is a remote request the package refuses before sending
	// it (no parts, too many, a part that is not exactly one kind).
	ErrRequest = errors.New("a2a: invalid remote request")
)

// CardReason says exactly why a card was refused; it is the Reason of a
// [CardError] and what `pablo a2a probe` prints.
type CardReason string

// The card refusals.
const (
	CardInsecureURL         CardReason = "insecure_url"
	CardFetchFailed         CardReason = "fetch_failed"
	CardTimedOut            CardReason = "timed_out"
	CardRedirect            CardReason = "redirect"
	CardHTTPStatus          CardReason = "http_status"
	CardTooLarge            CardReason = "too_large"
	CardNotJSON             CardReason = "not_json"
	CardInterface           CardReason = "interface"
	CardEndpointMismatch    CardReason = "endpoint_mismatch"
	CardInputModes          CardReason = "input_modes"
	CardOutputModes         CardReason = "output_modes"
	CardBounds              CardReason = "bounds"
	CardRequiredExtension   CardReason = "required_extension"
	CardTraceExtension      CardReason = "trace_extension"
	CardSecurity            CardReason = "security"
	CardDuplicateSkill      CardReason = "duplicate_skill"
	CardUnsupportedProtocol CardReason = "unsupported_protocol"
)

// CardError is a refused Agent Card: the remote, the reason and a detail
// written by Pablo (the card's own text never appears in it).
type CardError struct {
	Remote string
	Reason CardReason
	Detail string
}

func (e *CardError) Error() string {
	return fmt.Sprintf("a2a: remote %q: agent card refused (%s): %s", e.Remote, e.Reason, e.Detail)
}

// Is makes every CardError match ErrCardRefused.
func (e *CardError) Is(target error) bool { return target == ErrCardRefused }

// The A2A error codes and their pinned meanings (A2A 1.0 §5.4; the
// reference keeps -32001..-32009 as they are).
const (
	CodeTaskNotFound                   = -32001
	CodeTaskNotCancelable              = -32002
	CodePushNotificationNotSupported   = -32003
	CodeUnsupportedOperation           = -32004
	CodeContentTypeNotSupported        = -32005
	CodeInvalidAgentResponse           = -32006
	CodeExtendedAgentCardNotConfigured = -32007
	CodeExtensionSupportRequired       = -32008
	CodeVersionNotSupported            = -32009
)

// CodeMeaning returns the pinned meaning of an A2A or JSON-RPC error code,
// or "" for a code with none. The meaning is Pablo's text: a peer's own
// error message never reaches a diagnostic.
func CodeMeaning(code int) string {
	switch code {
	case CodeTaskNotFound:
		return "task not found"
	case CodeTaskNotCancelable:
		return "task not cancelable"
	case CodePushNotificationNotSupported:
		return "push notifications not supported"
	case CodeUnsupportedOperation:
		return "unsupported operation"
	case CodeContentTypeNotSupported:
		return "content type not supported"
	case CodeInvalidAgentResponse:
		return "invalid agent response"
	case CodeExtendedAgentCardNotConfigured:
		return "extended agent card not configured"
	case CodeExtensionSupportRequired:
		return "extension support required"
	case CodeVersionNotSupported:
		return "version not supported"
	case -32700:
		return "parse error"
	case -32600:
		return "invalid request"
	case -32601:
		return "method not found"
	case -32602:
		return "invalid params"
	case -32603:
		return "internal error"
	}
	return ""
}

// ProtocolError is a peer's answer outside the subset, or its JSON-RPC
// error. Code is the JSON-RPC error code when the peer sent one (0
// otherwise); Detail is Pablo's text. The peer's error message is never
// kept: PeerMessageBytes says only how long it was.
type ProtocolError struct {
	Remote           string
	Method           string
	Code             int
	Detail           string
	PeerMessageBytes int
}

func (e *ProtocolError) Error() string {
	msg := fmt.Sprintf("a2a: remote %q: %s: %s", e.Remote, e.Method, e.Detail)
	if e.Code != 0 {
		meaning := CodeMeaning(e.Code)
		if meaning == "" {
			meaning = "unpinned code"
		}
		msg += fmt.Sprintf(" (code %d: %s; the peer's message is withheld)", e.Code, meaning)
	}
	return msg
}

// Is makes every ProtocolError match ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }
