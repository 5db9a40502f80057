package mcp

import (
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/internal/textx"
)

// Sentinel kinds, usable with errors.Is on every error this package returns.
var (
	// ErrConfig: a server configuration cannot be used as given.
	ErrConfig = errors.New("mcp: invalid server configuration")
	// ErrDenied: policy denied a server or tool.
	ErrDenied = errors.New("mcp: denied by policy")
	// ErrStartup: a server did not start, initialize or list its tools.
	ErrStartup = errors.New("mcp: server startup failed")
	// ErrProtocol: the peer broke the protocol (a JSON-RPC error, an
	// unsupported version, a malformed or oversized message).
	ErrProtocol = errors.New("mcp: protocol error")
	// ErrUnsupportedVersion: the server negotiated a protocol version this
	// client does not implement. It also matches ErrProtocol.
	ErrUnsupportedVersion = errors.New("mcp: unsupported protocol version")
	// ErrDefinitionChanged: a tool's definition no longer matches its pin.
	ErrDefinitionChanged = errors.New("mcp: tool definition changed")
	// ErrUnsupportedSchema: a tool's schema is outside the bounded subset.
	ErrUnsupportedSchema = errors.New("mcp: tool schema not supported")
	// ErrUnsupportedContent: a result holds content this client does not
	// accept (image, audio, resource, resource link).
	ErrUnsupportedContent = errors.New("mcp: unsupported result content")
	// ErrInvalidResult: a result broke the tool's declared output contract.
	ErrInvalidResult = errors.New("mcp: invalid tool result")
	// ErrBound: a catalog or message bound was exceeded.
	ErrBound = errors.New("mcp: bound exceeded")
	// ErrSessionEnded: the server ended the session (HTTP 404) or the
	// catalog was closed; a fresh task is needed.
	ErrSessionEnded = errors.New("mcp: session ended")
	// ErrUnknownOutcome: a request left the process and its response was
	// lost; whether the server acted is unknown. It is never replayed.
	ErrUnknownOutcome = errors.New("mcp: outcome unknown")
	// ErrRedirect: an HTTP server answered with a redirect, which is never
	// followed.
	ErrRedirect = errors.New("mcp: redirect refused")
)

// Code is a reference error code for MCP configuration and admission
// failures ("mcp_launcher", "mcp_policy_denied", ...).
type Code string

// The codes this package reports, from the reference.
const (
	CodeTimeout            Code = "mcp_timeout"
	CodeLauncher           Code = "mcp_launcher"
	CodeCWD                Code = "mcp_cwd"
	CodeEnvironment        Code = "mcp_environment"
	CodeEndpoint           Code = "mcp_endpoint"
	CodeHeaders            Code = "mcp_headers"
	CodeConfigurationBound Code = "mcp_configuration_bound"
	CodeServerName         Code = "mcp_server_name"
	CodeDuplicateServer    Code = "mcp_duplicate_server"
	CodeUnconfigured       Code = "mcp_unconfigured_server"
	CodePolicyDenied       Code = "mcp_policy_denied"
	CodeToolIdentity       Code = "mcp_tool_identity"
	CodeCatalogBound       Code = "mcp_catalog_bound"
	CodeIdentityCollision  Code = "mcp_identity_collision"
	// The codes below are this package's own, for what the reference folds
	// into startup failures.
	CodeStartup           Code = "mcp_startup"
	CodeProtocol          Code = "mcp_protocol"
	CodeVersion           Code = "mcp_protocol_version"
	CodeSchema            Code = "mcp_schema"
	CodeDefinitionChanged Code = "mcp_definition_changed"
	CodeCredential        Code = "mcp_credential"
	CodeTaskRequired      Code = "mcp_task_required"
	CodeOAuth             Code = "mcp_oauth"
)

// ServerError is a failure of one server: configuration, admission or
// startup. It wraps the sentinel kind and the cause.
type ServerError struct {
	Server string
	Code   Code
	Kind   error
	Reason string
	Err    error
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("mcp: server %q: %s (%s)", e.Server, e.Reason, e.Code)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the kind and the cause.
func (e *ServerError) Unwrap() []error {
	errs := []error{e.Kind}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// VersionError reports a protocol version this client does not implement.
type VersionError struct {
	Server    string
	Requested string
	Got       string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("mcp: server %q negotiated protocol version %q; this client implements %v (requested %s)", e.Server, textx.Shorten(e.Got, 64), SupportedVersions(), e.Requested)
}

// Unwrap returns ErrUnsupportedVersion and ErrProtocol.
func (e *VersionError) Unwrap() []error { return []error{ErrUnsupportedVersion, ErrProtocol} }

// DefinitionChangedError is a tool whose definition digest differs from the
// digest a deployment pinned for it. The tool is unavailable.
type DefinitionChangedError struct {
	Tool string // qualified ID
	Want string
	Got  string
}

func (e *DefinitionChangedError) Error() string {
	return fmt.Sprintf("mcp: tool %s changed its definition: pinned %s, server now declares %s; review the new definition and update the pin", e.Tool, e.Want, e.Got)
}

// Unwrap returns ErrDefinitionChanged.
func (e *DefinitionChangedError) Unwrap() error { return ErrDefinitionChanged }

// ContentError is a result holding a content block of a type this client
// does not accept. Nothing is flattened into text.
type ContentError struct {
	Tool  string
	Type  string
	Index int
}

func (e *ContentError) Error() string {
	return fmt.Sprintf("mcp: tool %s returned %q content (block %d); only text and structured content are supported", e.Tool, textx.Shorten(e.Type, 32), e.Index)
}

// Unwrap returns ErrUnsupportedContent.
func (e *ContentError) Unwrap() error { return ErrUnsupportedContent }

// RPCError is a JSON-RPC error response: a protocol failure. Message is the
// peer's text, bounded and masked of the catalog's credentials; it is
// untrusted and never exported to telemetry.
type RPCError struct {
	Method  string
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("mcp: %s failed with JSON-RPC error %d: %s", e.Method, e.Code, textx.Shorten(e.Message, 200))
}

// Unwrap returns ErrProtocol.
func (e *RPCError) Unwrap() error { return ErrProtocol }

// CallError is a failed tools/call. Delivery says whether the request may
// have reached the server.
type CallError struct {
	Tool     string
	Kind     error
	Delivery string
	Err      error
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("mcp: call %s: %v (delivery %s)", e.Tool, e.Kind, e.Delivery)
	if e.Err != nil && e.Err != e.Kind {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the kind and the cause.
func (e *CallError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}
